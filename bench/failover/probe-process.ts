// The failover benchmark's second probe, in a process of its own (../failover.bench.ts): the bench's
// own probe shares its event loop with the 32 load loops, whose retries and backoffs during a failover
// delay when it sees every shard again. This one does nothing else, so "served" by it is the cluster's
// time, not the load generator's. Protocol over the fork's IPC channel: it says `ready` once connected;
// on `go` it GETs one key of every shard until each succeeds (as allShardsServed does) and answers
// `served` with the monotonic time (CLOCK_MONOTONIC: the same in every process of the host), or
// `failed` with the reason; then it exits.
import { RowanClient } from '../../client/client.js';
import { monotonicClock } from '../../config/base/clock.js';
import { allShardsServed, probeKeys } from '../../test/fixtures/failover-cluster.js';

export type ProbeMessage = { t: 'ready' } | { t: 'served'; at: number } | { t: 'failed'; why: string };

async function main(): Promise<void> {
  const [file, shards] = [process.argv[2]!, Number(process.argv[3])];
  const send = (m: ProbeMessage) => process.send!(m);
  const probe = await RowanClient.connect({ cluster: file, retries: 8, timeoutMs: 3000 });
  process.once('message', () => {
    allShardsServed(probe, probeKeys(shards), 20_000)
      .then(() => send({ t: 'served', at: monotonicClock.now() }), (err: Error) => send({ t: 'failed', why: err.message }))
      .finally(() => void probe.close().finally(() => process.disconnect()));
  });
  send({ t: 'ready' });
}

void main().catch((err: Error) => {
  process.send?.({ t: 'failed', why: err.message } satisfies ProbeMessage);
  process.exit(1);
});
