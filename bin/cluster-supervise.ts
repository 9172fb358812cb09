// `rowan cluster` as a supervisor (§4.5 phase 3): a node process that dies is restarted with backoff
// (1 s, 2 s, 4 s ... capped at restartDelayMsMax; back to 1 s once a run lasted stableRunMs). The
// manager fails the dead node over first; once the stored configuration lists it dead its data is
// stale, so it restarts with `--rejoin` (its pool kept but not served, each shard reconciled with its
// primary before it counts) and the manager takes it back as a member holding no shard, to which re-replication then gives shards. A node that is not listed dead within
// deadWaitMsFor the lease in force (a mode without failover) restarts with its data, as a cold start
// would. The timings: config/timings.ts.
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { ClusterConfig } from '../config/cluster.js';
import { FileConfigStore, type ConfigStore } from '../config/store.js';
import { defaultTimings } from '../config/timings.js';

export class RestartBackoff {
  private attempts = 0;
  private startedAt = 0;

  /** A run of the node began at `now` (Date.now(): the launcher is no actor). */
  started(now: number): void {
    this.startedAt = now;
  }

  /** The delay before the next restart of a node that exited at `now`. */
  next(now: number): number {
    if (now - this.startedAt >= defaultTimings.stableRunMs) this.attempts = 0;
    const ms = Math.min(defaultTimings.restartDelayMs * 2 ** this.attempts, defaultTimings.restartDelayMsMax);
    this.attempts++;
    return ms;
  }
}

/** Whether the stored configuration lists `id` dead, polled until it does, `give up` or `waitMs`
 *  (deadWaitMsFor the lease the manager grants: until it may have failed the node over). */
export async function waitListedDead(store: ConfigStore, id: number, giveUp: () => boolean, waitMs: number): Promise<boolean> {
  const t0 = Date.now();
  for (;;) {
    try {
      if (((await store.read()).dead ?? []).includes(id)) return true;
    } catch {
      // being replaced: read again
    }
    if (giveUp() || Date.now() - t0 > waitMs) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** One line per configuration change: failovers, rejoins, new backups, caught-up backups. */
export function describeChange(before: ClusterConfig, after: ClusterConfig): string {
  const lines: string[] = [];
  const head = `term ${before.term} -> ${after.term}`;
  const died = (after.dead ?? []).filter((d) => !(before.dead ?? []).includes(d));
  const back = (before.dead ?? []).filter((d) => !(after.dead ?? []).includes(d));
  const moved = after.shards.filter((s) => before.shards[s.id]?.primary !== s.primary).map((s) => `${s.id}:${before.shards[s.id]?.primary}->${s.primary}`);
  const key = (x: { shard: number; node: number }) => `${x.shard}->${x.node}`;
  const was = new Set((before.catchingUp ?? []).map(key));
  const is = new Set((after.catchingUp ?? []).map(key));
  const added = [...is].filter((k) => !was.has(k));
  const caught = [...was].filter((k) => !is.has(k) && after.shards[Number(k.split('->')[0])]!.backups.includes(Number(k.split('->')[1])));
  if (died.length > 0 || moved.length > 0) {
    lines.push(`failover: ${head}; dead node(s) ${died.join(',') || '-'}; ${moved.length} shard(s) moved${moved.length ? ` (${moved.join(' ')})` : ''}; live nodes ${after.nodes.filter((n) => !(after.dead ?? []).includes(n.id)).map((n) => n.id).join(',')}`);
  }
  if (back.length > 0) lines.push(`rejoin: ${head}; node(s) ${back.join(',')} rejoined (its pool kept if intact), holding no shard`);
  if (added.length > 0) lines.push(`re-replication: ${head}; new backup(s) catching up: ${added.join(' ')} (shard->node)`);
  if (caught.length > 0) {
    const short = after.shards.filter((s) => s.backups.length + 1 < after.replicationFactor).length;
    const left = after.catchingUp?.length ?? 0;
    lines.push(`caught up: ${head}; ${caught.join(' ')} (shard->node)${left > 0 ? `; ${left} still catching up` : short > 0 ? `; ${short} shard(s) below ${after.replicationFactor} replicas` : `; every shard has ${after.replicationFactor} replicas`}`);
  }
  lines.push(...membershipChange(before, after, head));
  return lines.length > 0 ? lines.join('\n') : `configuration: ${head}`;
}

/** Nodes added, leaving and removed, copies started and a balancing finished (actors/manager/membership.ts). */
function membershipChange(before: ClusterConfig, after: ClusterConfig, head: string): string[] {
  const lines: string[] = [];
  const added = after.nodes.filter((n) => !before.nodes.some((b) => b.id === n.id)).map((n) => n.id);
  const removed = before.nodes.filter((n) => !after.nodes.some((a) => a.id === n.id)).map((n) => n.id);
  const leaving = (after.leaving ?? []).filter((n) => !(before.leaving ?? []).includes(n));
  const copies = (after.copies ?? []).filter((t) => !(before.copies ?? []).some((b) => b.shard === t.shard)).map((t) => `${t.shard}:${t.source}->${t.target}`);
  if (added.length > 0) lines.push(`add-node: ${head}; node(s) ${added.join(',')} joined, holding no shard (replicas are copied onto them)`);
  if (leaving.length > 0) lines.push(`decommission: ${head}; node(s) ${leaving.join(',')} leaving (replicas are moved off them)`);
  if (copies.length > 0) lines.push(`copy: ${head}; ${copies.join(' ')} (shard:from->to)`);
  if (removed.length > 0) lines.push(`decommission: ${head}; node(s) ${removed.join(',')} removed from the membership`);
  if (before.balancing && !after.balancing) lines.push(`balanced: ${head}; replicas and primaries spread over the members`);
  return lines;
}

/** How often a store that cannot be watched (ZooKeeper) is read for changes to print. */
export const CHANGE_POLL_MS = 250;
/** A watched file store is also read this often, in case a change notification never comes (a
 *  file system without inotify). */
export const CHANGE_FALLBACK_MS = 5000;

/**
 * Call `changed` with each configuration the store holds that differs in term from the last one seen
 * (what the launcher prints). A file store is watched (inotify on its directory: the file is replaced
 * by a rename) and read only when something there changed, so an idle cluster's launcher sleeps;
 * other stores are read every CHANGE_POLL_MS. An unreadable store (being replaced, no ZooKeeper
 * session) is read again next time. Returns the stop.
 */
export function watchStoreChanges(store: ConfigStore, first: ClusterConfig, changed: (from: ClusterConfig, to: ClusterConfig) => void): () => void {
  let seen = first;
  let reading = false;
  let again = false;
  let stopped = false;
  const look = (): void => {
    if (stopped) return;
    if (reading) return void (again = true);
    reading = true;
    store.read().then((now) => {
      if (now.term === seen.term || stopped) return;
      changed(seen, now);
      seen = now;
    }, () => {}).finally(() => {
      reading = false;
      if (again) {
        again = false;
        look();
      }
    });
  };
  const file = store instanceof FileConfigStore ? store.path : null;
  let watcher: FSWatcher | null = null;
  if (file !== null) {
    try {
      watcher = watch(dirname(file), { persistent: false }, (_event, name) => {
        if (name === null || name === basename(file)) look();
      });
      watcher.on('error', () => {}); // the fallback reads go on
    } catch {
      watcher = null;
    }
  }
  const timer = setInterval(look, watcher !== null ? CHANGE_FALLBACK_MS : CHANGE_POLL_MS);
  return () => {
    stopped = true;
    clearInterval(timer);
    watcher?.close();
  };
}
