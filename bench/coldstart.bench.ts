// Cold start (§4.7): how fast one node rebuilds its indexes from its pool, at 1 M and 5 M objects
// (--quick: 200 k). A pool file (pagecache mode) is filled with PUTs of 16 B keys and 16-48 B values
// through two workers' t-logs (as a node's workers write them), closed, and opened again as a restart
// would; then rebuildIndexes() -- the function `rowan start` runs -- rebuilds every shard's index.
// Phases, per run:
//   meta      mapping the pool and validating its superblock and segment meta table (Pool.open)
//   scan      reading and verifying every log entry (CRC32C per block) without indexing: a scan-only
//             pass on one thread, whatever `threads` is
//   rebuild   the rebuild itself (scan + index inserts + live bytes) on `threads` threads
//   index     rebuild - scan: the index inserts' share, shown for one thread only (with more, the
//             rebuild's scan is parallel too and the difference means nothing)
// Objects/s = objects / (meta + rebuild). Progress is printed as the fill and the rebuild go.
//
//   npm run bench -- coldstart [--quick] [--threads=N]   (default: 1 and 2 threads; `rowan start` uses the CPUs, at most 4)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monotonicClock } from '../config/base/clock.js';
import { tlogOwner } from '../config/base/ids.js';
import { planCluster } from '../config/cluster.js';
import { defaultLimits } from '../config/limits.js';
import { createKvShared } from '../actors/shared/node-shared.js';
import { rebuildIndexesParallel } from '../actors/node/recovery.js';
import { shardOfKey } from '../config/slots.js';
import { EntryType, scanEntries } from '../shm/log.js';
import { OwnerRole, Pool } from '../shm/pool.js';
import { TLog } from '../shm/tlog.js';
import { progress, recordParams, type Row } from './report.js';

const SHARDS = 16;
const WORKERS = 2;

function cluster(dir: string) {
  return planCluster({
    nodes: [{ id: 0, host: '127.0.0.1', dataDir: dir, workerPorts: [1], fabric: { kind: 'shm', host: '127.0.0.1', port: 2 } }],
    shardCount: SHARDS,
    replicationFactor: 1,
    replication: 'rowan',
  });
}

function fill(pool: Pool, objects: number): void {
  const logs = Array.from({ length: WORKERS }, (_, w) => TLog.recover(pool, tlogOwner(w), defaultLimits));
  const key = new Uint8Array(16);
  const value = new Uint8Array(48);
  const versions = new Array<number>(SHARDS).fill(0);
  const step = Math.max(1, Math.floor(objects / 20));
  for (let i = 0; i < objects; i++) {
    const k = `key-${String(i).padStart(12, '0')}`;
    for (let j = 0; j < 16; j++) key[j] = k.charCodeAt(j);
    value.fill(97 + (i % 26));
    const shard = shardOfKey(key, SHARDS);
    logs[i % WORKERS]!.append({ type: EntryType.Put, shard, version: ++versions[shard]!, key, value: value.subarray(0, 16 + (i % 33)) });
    if (i % step === 0) progress(`coldstart: filling ${objects} objects`, i, objects);
  }
}

function scanOnly(pool: Pool): number {
  let n = 0;
  for (const seg of pool.segments({ role: OwnerRole.Worker })) {
    const start = pool.segmentOffset(seg);
    for (const e of scanEntries(pool.region.bytes, start, start + pool.segmentBytes, defaultLimits)) if (e.version > 0) n++;
  }
  return n;
}

async function once(objects: number, threads: number): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-coldstart-'));
  const path = join(dir, 'pool.pm');
  const segmentBytes = 4 * 1024 * 1024;
  const segmentCount = Math.ceil((objects * 128) / segmentBytes) + 16;
  try {
    const c = cluster(dir);
    const created = Pool.create(path, { segmentBytes, segmentCount, mode: 'pagecache' });
    fill(created, objects);
    created.close();

    const clock = monotonicClock;
    const t0 = clock.now();
    const pool = Pool.open(path, { mode: 'pagecache' });
    const tMeta = clock.now() - t0;
    const t1 = clock.now();
    const scanned = scanOnly(pool);
    const tScan = clock.now() - t1;
    const keysPerShard = Math.ceil(objects / SHARDS);
    const buffers = createKvShared(c, 0, keysPerShard, pool, Math.max(keysPerShard * 2, defaultLimits.indexKeysPerShardMax));
    const t2 = clock.now();
    const rep = await rebuildIndexesParallel(pool, buffers, defaultLimits, clock, threads, (done, total) => progress(`coldstart: rebuilding ${objects} objects, ${threads} thread(s)`, done, total));
    const tFull = clock.now() - t2;
    pool.close();
    if (scanned !== objects || rep.indexed !== objects) throw new Error(`coldstart: ${objects} written, ${scanned} scanned, ${rep.indexed} indexed`);
    const total = tMeta + tFull;
    return {
      objects,
      segments: rep.logSegments,
      metaMs: +tMeta.toFixed(1),
      scanMs: +tScan.toFixed(1),
      rebuildMs: +tFull.toFixed(1),
      indexMs: threads === 1 ? +Math.max(0, tFull - tScan).toFixed(1) : null,
      totalMs: +total.toFixed(1),
      objectsPerSec: Math.round(objects / (total / 1000)),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<Row[]> {
  const quick = process.argv.includes('--quick');
  const sizes = quick ? [200_000] : [1_000_000, 5_000_000];
  const rows: Row[] = [];
  const flag = process.argv.find((a) => a.startsWith('--threads='));
  const threads = flag ? [Number(flag.split('=')[1])] : [1, 2];
  recordParams({ quick, objects: sizes, threads, shards: SHARDS, workers: WORKERS, keyBytes: 16, valueBytes: '16-48', mode: 'pagecache' });
  for (const n of sizes) for (const t of threads) rows.push({ threads: t, ...(await once(n, t)) });
  return rows;
}
