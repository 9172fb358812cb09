// What must hold after every run (issue 10):
//   gc       no index item of any node points into a Free segment or at bytes that do not verify as an
//            entry of that key (GC freed nothing live; nothing overwrote an indexed entry);
//   replicas after a power cycle of every node (cold start from its surviving bytes alone), every
//            replica answers for every key it holds with a value the history allows at that point --
//            every acknowledged write is there at its latest version, nothing older came back;
//   versions after that cold start no replica's index holds an entry of a key (a value or a tombstone) at
//            a version below the key's newest acknowledged PUT/DEL: the acknowledged write is there
//            or, a tombstone the sweep dropped, nothing older is. Stricter than the history check: a
//            resurrected write of unknown outcome fits the history (the checker may place it after the
//            DEL that superseded it), but its version says it came before that DEL;
//   counters at every cold start (faults.ts bootNode), each shard counter of a primary resumes at or
//            above every tombstone floor another member persisted for the shard (SimNode.countersBelowFloors);
//   history  the clients' history, with final reads on the primaries and the replicas' answers after
//            the cold start, is linearizable per key (test/check/linearizability.ts), replica by replica.
import type { ClusterConfig } from '../../config/cluster.js';
import { defaultLimits } from '../../config/limits.js';
import { EntryType, readEntryAt } from '../../shm/log.js';
import { SegmentState } from '../../shm/pool.js';
import { hash64Into } from '../../shm/hash.js';
import { PoolEntryReader } from '../../shm/entry-reader.js';
import { checkLinearizability, type Operation } from '../check/linearizability.js';
import { idOf, shardOfKey } from './clients.js';
import type { SimNode } from './node.js';

export interface Finding {
  check: 'gc' | 'digest' | 'replicas' | 'versions' | 'history' | 'primaries' | 'run';
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

/** No b-log segment stays Used for a shard the node no longer backs up (promoted here, or moved away):
 *  its primary sends it no CommitVer any more, so the segment would never commit, its floors never
 *  become effective, and the b-log would leak a segment per such shard and failover. */
export function checkDigestHeld(n: SimNode): Finding[] {
  return n.digest.heldByShardsGone().map((p) => ({ check: 'digest', node: n.id, detail: `b-log segment ${p.segment} held Used by shard(s) ${p.shards.join(', ')}, which node ${n.id} no longer backs up (term ${n.cell.term()})` }));
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

/** Per key, its acknowledged PUT or DEL with the highest version (`versions`: ./clients.ts). */
export function newestAcknowledged(history: readonly Operation[], versions: ReadonlyMap<Operation, number>): Map<string, { op: Operation; version: number }> {
  const out = new Map<string, { op: Operation; version: number }>();
  for (const op of history) {
    if (op.op === 'get' || op.outcome !== 'ok') continue;
    const version = versions.get(op);
    if (version === undefined) continue; // a DEL of a key its primary did not hold: nothing written
    const cur = out.get(op.key);
    if (!cur || cur.version < version) out.set(op.key, { op, version });
  }
  return out;
}

/** Every key a node holds a full replica of in `c`: its index item, if any, is at a version no lower than
 *  the key's newest acknowledged write (`newest`). No item is no finding here (a tombstone the sweep
 *  dropped; an acknowledged PUT missing is the history check's). */
export function checkReplicaVersions(n: SimNode, c: ClusterConfig, newest: ReadonlyMap<string, { op: Operation; version: number }>): Finding[] {
  const out: Finding[] = [];
  const reader = new PoolEntryReader(n.pool.region, defaultLimits);
  const hash = { hi: 0, lo: 0 };
  for (const [key, w] of newest) {
    if (!n.holds(key, c)) continue;
    const shard = shardOfKey(c, key);
    const index = n.shared.indexes[shard];
    if (!index) continue;
    const k = enc.encode(key);
    const addr = index.get(k, hash64Into(k, hash), reader);
    if (addr === 0) continue;
    const e = readEntryAt(n.pool.region.bytes, addr, defaultLimits);
    if (e === null || e.version >= w.version) continue; // an entry that does not verify: checkIndexes'
    const has = e.type === EntryType.Del ? 'a tombstone' : `PUT ${idOf(new TextDecoder().decode(e.value))}`;
    const ack = `${w.op.op.toUpperCase()}${w.op.value === undefined ? '' : ` ${w.op.value}`} of client ${w.op.client} (${w.op.invoke.toFixed(1)}-${w.op.response?.toFixed(1)} ms)`;
    out.push({ check: 'versions', node: n.id, detail: `${key} (shard ${shard}) after a cold start: ${has} at version ${e.version}, older than the acknowledged ${ack} at version ${w.version}` });
  }
  return out;
}

/** The history with the extra reads, checked per key; a finding for anything but a clean pass. */
export function checkHistory(history: readonly Operation[], label: string): Finding[] {
  const r = checkLinearizability(history, { maxStepsPerKey: 2_000_000 });
  if (r.ok === true) return [];
  return [{ check: 'history', detail: `${label}: ${r.describe()}` }];
}
