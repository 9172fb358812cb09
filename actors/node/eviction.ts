// What an evicted node says before it stops (./node-application.ts): a node failed over (its lease
// expired) is restarted with --rejoin and taken back holding no shard; a node decommissioned (`rowan
// node decommission`, its id retired: never a member again) is done and must not be restarted.

/** The log line of an eviction; `retired`: the manager said the node's id was retired. */
export function evictionLine(retired: boolean, exitInMs: number): string {
  if (retired) return `decommissioned: this node was removed from the membership for good (its id is retired, never taken back); it stops in ${exitInMs} ms and is not to be restarted (rowan cluster does not)`;
  return `evicted: this node stops in ${exitInMs} ms; restart it with --rejoin (rowan cluster does) to take it back as a member holding no shard`;
}
