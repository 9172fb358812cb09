// What must hold after every run (issue 10):
//   gc       no index item of any node points into a Free segment or at bytes that do not verify as an
//            entry of that key (GC freed nothing live; nothing overwrote an indexed entry);
//   replicas after a power cycle of every node (cold start from its surviving bytes alone), every
//            replica answers for every key it holds with a value the history allows at that point --
//            every acknowledged write is there at its latest version, nothing older came back;
//   history  the clients' history, with final reads on the primaries and the replicas' answers after
//            the cold start, is linearizable per key (test/check/linearizability.ts), replica by replica.
import type { ClusterConfig } from '../../config/cluster.js';
import { defaultLimits } from '../../config/limits.js';
import { readEntryAt } from '../../shm/log.js';
import { SegmentState } from '../../shm/pool.js';
import { checkLinearizability, type Operation } from '../check/linearizability.js';
import { idOf } from './clients.js';
import type { SimNode } from './node.js';

export interface Finding {
  check: 'gc' | 'replicas' | 'history' | 'run';
  node?: number;
  detail: string;
}

const enc = new TextEncoder();

/** Every index item of a running node points at a verified entry of its key in a non-Free segment. */
export function checkIndexes(n: SimNode): Finding[] {
  const out: Finding[] = [];
  const pool = n.pool;
  n.shared.indexes.forEach((index, shard) => {
    index?.forEach((addr) => {
      const seg = pool.segmentOf(addr);
      const st = pool.meta(seg).state;
      if (st === SegmentState.Free) {
        out.push({ check: 'gc', node: n.id, detail: `shard ${shard}: index points at ${addr} in Free segment ${seg}` });
        return;
      }
      const e = readEntryAt(pool.region.bytes, addr, defaultLimits);
      if (e === null) out.push({ check: 'gc', node: n.id, detail: `shard ${shard}: index points at ${addr} (segment ${seg}), which holds no verified entry` });
      else if (e.shard !== shard) out.push({ check: 'gc', node: n.id, detail: `shard ${shard}: index points at an entry of shard ${e.shard} at ${addr}` });
    });
  });
  return out;
}

/** Read every key a node holds a full replica of in `c` from its own index (a cold-started replica's answers). */
export async function replicaReads(n: SimNode, c: ClusterConfig, keys: string[], at: () => number, client: number): Promise<{ ops: Operation[]; findings: Finding[] }> {
  const ops: Operation[] = [];
  const findings: Finding[] = [];
  for (const key of keys) {
    if (!n.holds(key, c)) continue;
    const t = at();
    try {
      const v = await n.worker.getReplica(enc.encode(key));
      ops.push({ client, key, op: 'get', output: v === null ? null : idOf(new TextDecoder().decode(v)), invoke: t, response: t, outcome: 'ok' });
    } catch (err) {
      findings.push({ check: 'replicas', node: n.id, detail: `GET ${key} after cold start: ${(err as Error).message}` });
    }
  }
  return { ops, findings };
}

/** The history with the extra reads, checked per key; a finding for anything but a clean pass. */
export function checkHistory(history: readonly Operation[], label: string): Finding[] {
  const r = checkLinearizability(history, { maxStepsPerKey: 2_000_000 });
  if (r.ok === true) return [];
  return [{ check: 'history', detail: `${label}: ${r.describe()}` }];
}
