// One node's pool, shard indexes and GC state in this process, filled so that the Committed segments a
// Cleaner will see hold a chosen share of live bytes (bench/gc.bench.ts). Writes go through t-logs and
// index upserts with live-byte accounting, as a worker does (test/fixtures/gc-race-thread.ts):
//
//   phase 1  t-log 0 writes keys 0, 1, 2, ... once each until it has filled `segments` segments; each
//            full segment is sealed (Committed) when the next is allocated. The newest segment stays
//            Using, as a worker's current segment does, so GC does not see it.
//   phase 2  t-log 1 overwrites an evenly spread (1 - liveShare) of those keys, so every phase-1 segment
//            keeps liveShare of its entries live. Phase-2 segments are ~100 % live: above any threshold.
//
// Evenly spread rather than random: a random choice scatters the per-segment live share by a few
// percent, and at 70 % some segments would cross the 75 % threshold and drop out of the measurement.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planCluster } from '../../config/cluster.js';
import { shardOfKey } from '../../config/slots.js';
import { defaultLimits } from '../../config/limits.js';
import { attachKvShared, createKvShared, indexEntry, nextVersion, type KvShared } from '../../actors/shared/node-shared.js';
import { PoolEntryReader } from '../../shm/entry-reader.js';
import { hash64, hash64Into, type KeyHash } from '../../shm/hash.js';
import { encodedSize, EntryType, readEntryAt, storedSizeAt } from '../../shm/log.js';
import { OwnerRole, Pool, SegmentState } from '../../shm/pool.js';
import { TLog } from '../../shm/tlog.js';
import { keyOf } from '../ycsb/zipfian.js';

export interface GcFillSpec {
  poolSegments: number;
  segmentBytes: number;
  /** Phase-1 segments: what the Cleaner gets to clean. At most (poolSegments - 4) / 2: phase 2 plus the
   *  clean log's copies take as many segments again. */
  segments: number;
  valueBytes: number;
  /** Fraction of each phase-1 segment's entries left live, in [0, 1). */
  liveShare: number;
  shardCount?: number;
}

export interface GcFixture {
  pool: Pool;
  shared: KvShared;
  /** Keys written in phase 1 (ids 0 .. keys-1). */
  keys: number;
  /** Bytes one entry occupies in the log. */
  entryBytes: number;
  /** Phase-1 segments (Committed, the Cleaner's candidates). */
  filled: number[];
  /** Newest version of every key (what a GET must return). */
  expected: Float64Array;
  close: () => void;
}

const KEY_BYTES = keyOf(0).length;

/** Does phase 2 overwrite key i? Exactly floor(n * share) of the first n keys, for every n. */
export function overwritten(i: number, deadShare: number): boolean {
  return Math.floor((i + 1) * deadShare) > Math.floor(i * deadShare);
}

/** The value of key i at `version`: key id and version in the first 8 bytes, so a read can be checked
 *  without keeping values around; the rest is a fixed filler. */
function valueOf(i: number, version: number, valueBytes: number, filler: Uint8Array): Uint8Array {
  const v = filler.slice(0, valueBytes);
  const dv = new DataView(v.buffer);
  dv.setUint32(0, i, true);
  dv.setUint32(4, version, true);
  return v;
}

export function createGcFixture(s: GcFillSpec): GcFixture {
  const limits = defaultLimits;
  const shardCount = s.shardCount ?? 8;
  if (s.valueBytes < 8) throw new Error('gc fixture: values of at least 8 bytes (key id + version)');
  if (s.liveShare < 0 || s.liveShare >= 1) throw new Error('gc fixture: liveShare in [0, 1)');
  if (2 * s.segments + 4 > s.poolSegments) throw new Error(`gc fixture: ${s.segments} segments to fill need a pool of ${2 * s.segments + 4}`);
  const entryBytes = encodedSize(KEY_BYTES, s.valueBytes, limits);
  const keysMax = Math.ceil(((s.segments + 1) * s.segmentBytes) / entryBytes);
  const dir = mkdtempSync(join(tmpdir(), 'rowan-gc-bench-'));
  const pool = Pool.create(join(dir, 'pool.pm'), { segmentCount: s.poolSegments, segmentBytes: s.segmentBytes, mode: 'pagecache' });
  const close = () => {
    pool.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const cluster = planCluster({
      nodes: [{ id: 0, host: '127.0.0.1', dataDir: dir, workerPorts: [1], fabric: { kind: 'shm', host: '127.0.0.1', port: 0 } }],
      shardCount,
      replicationFactor: 1,
    });
    const shared = attachKvShared(createKvShared(cluster, 0, Math.ceil((keysMax / shardCount) * 1.3), pool), pool.region);
    const reader = new PoolEntryReader(pool.region, limits);
    const filler = new Uint8Array(s.valueBytes).fill(0x61);
    const expected = new Float64Array(keysMax);
    const enc = new TextEncoder();
    const put = (log: TLog, i: number) => {
      const key = enc.encode(keyOf(i));
      const hash = hash64(key);
      const shard = shardOfKey(key, shardCount);
      const version = nextVersion(shared.versions, shard);
      const addr = log.append({ type: EntryType.Put, shard, version, key, value: valueOf(i, version, s.valueBytes, filler) });
      indexEntry(shared, shard, key, hash, addr, version, reader);
      expected[i] = version;
    };

    const first = new TLog(pool, 0, limits);
    const filled: number[] = [];
    let keys = 0;
    while (filled.length <= s.segments) {
      put(first, keys++);
      if (first.segment !== filled.at(-1)) filled.push(first.segment);
    }
    filled.pop(); // the newest: still Using
    const second = new TLog(pool, 1, limits);
    const dead = 1 - s.liveShare;
    for (let i = 0; i < keys; i++) if (overwritten(i, dead)) put(second, i);
    for (const seg of filled) {
      if (pool.meta(seg).state !== SegmentState.Committed) throw new Error(`gc fixture: segment ${seg} is not Committed after the fill`);
    }
    return { pool, shared, keys, entryBytes, filled, expected: expected.subarray(0, keys), close };
  } catch (err) {
    close();
    throw err;
  }
}

/**
 * After cleaning: every key's index item leads to an intact entry of that key at its newest version and
 * value, in a segment that is not Free; every cleaned segment is Free or was reused by the clean log; and
 * the live-byte counters equal
 * the bytes the indexes point at, per segment. Throws on the first violation.
 */
export function verifyGcFixture(f: GcFixture, cleaned: number[]): void {
  const limits = defaultLimits;
  const bytes = f.pool.region.bytes;
  const reader = new PoolEntryReader(f.pool.region, limits);
  const gc = f.shared.gc!;
  const enc = new TextEncoder();
  const live = new Float64Array(f.pool.segmentCount);
  const hash: KeyHash = { hi: 0, lo: 0 };
  for (let i = 0; i < f.keys; i++) {
    const key = enc.encode(keyOf(i));
    hash64Into(key, hash);
    const addr = f.shared.indexes[shardOfKey(key, f.shared.indexes.length)]!.get(key, hash, reader);
    if (addr === 0) throw new Error(`gc verify: key ${i} lost`);
    const e = readEntryAt(bytes, addr, limits);
    if (e === null || e.type !== EntryType.Put) throw new Error(`gc verify: key ${i}: no intact PUT at ${addr}`);
    const dv = new DataView(e.value.buffer, e.value.byteOffset, e.value.byteLength);
    if (Buffer.compare(Buffer.from(e.key), Buffer.from(key)) !== 0 || e.version !== f.expected[i] || dv.getUint32(0, true) !== i || dv.getUint32(4, true) !== e.version) {
      throw new Error(`gc verify: key ${i} reads version ${e.version}, newest is ${f.expected[i]}`);
    }
    const seg = gc.live.segmentOf(addr);
    if (f.pool.meta(seg).state === SegmentState.Free) throw new Error(`gc verify: key ${i} points into free segment ${seg}`);
    live[seg]! += storedSizeAt(bytes, addr, limits);
  }
  for (const seg of cleaned) {
    const m = f.pool.meta(seg);
    if (m.state !== SegmentState.Free && m.role !== OwnerRole.Clean) throw new Error(`gc verify: cleaned segment ${seg} is still in use by role ${m.role}`);
  }
  for (let seg = 0; seg < f.pool.segmentCount; seg++) {
    if (gc.live.get(seg) !== live[seg]) throw new Error(`gc verify: segment ${seg} counts ${gc.live.get(seg)} live bytes, the indexes point at ${live[seg]}`);
  }
}
