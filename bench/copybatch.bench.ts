// Copy-batch pipeline benchmark (issue 28, "copies at memory speed"): a shard copy's work on both ends,
// in one process, for the v2 batches (every full entry framed on its own, cut into views, verified and
// appended one by one) and the packed batches (actors/shared/copy-packed.ts) side by side in one run.
// A primary's pool is filled with --keys objects of --value-bytes (default 200,000 of 100 B, and the
// same count of 1000 B), then copied to a fresh pool --reps times with each format, alternating: the
// primary's walk (readBatch / readPackedBatch), the new backup's decode and verification, its landing
// and indexing (absorbRaw / absorbPacked, in the slices the migration actor takes). Stages are timed in
// CPU (process.cpuUsage, user + system) so other work on the machine does not count; the wall time is
// reported too. No network, no other actors: what the copy itself costs per object, and the most one
// core on each end could copy (objects/s per core of the busier end). The end-to-end copy under load
// is `npm run bench -- copymove`.
//
//   npm run bench -- copybatch [--quick] [--keys=200000] [--reps=3]
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROMOTION_ACTOR_ID } from '../config/base/ids.js';
import { planCluster } from '../config/cluster.js';
import { defaultLimits as limits } from '../config/limits.js';
import { absorbPacked, absorbRaw, verifyRaw } from '../actors/migration/absorb.js';
import { ABSORB_SLICE, PACKED_SLICE } from '../actors/migration/copy.js';
import { COPY_BATCH_BYTES, COPY_DONE, decodeBatch, readBatch } from '../actors/shared/copy-batch.js';
import { decodePackedBatch, readPackedBatch } from '../actors/shared/copy-packed.js';
import { absorbEntries, type RawEntry } from '../actors/shared/gather-scatter.js';
import { attachKvShared, createKvShared, type KvShared } from '../actors/shared/node-shared.js';
import { EntryType } from '../shm/log.js';
import { OwnerRole, Pool } from '../shm/pool.js';
import { TLog } from '../shm/tlog.js';
import { progress, recordParams, type Row } from './report.js';

const FRAME = 1 << 20;

interface Node {
  pool: Pool;
  shared: KvShared;
  log: TLog;
}

interface Stages {
  read: number;
  verify: number;
  absorb: number;
}

function flag(name: string, dflt: number): number {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a ? Number(a.split('=')[1]) : dflt;
}

/** CPU ms of this process so far (user + system). */
function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function v2(p: Node, to: Node, t: Stages): { n: number; bytes: number } {
  let [cursor, n, bytes] = [0, 0, 0];
  while (cursor !== COPY_DONE) {
    let a = cpuMs();
    const u = readBatch(p.shared.indexes[0]!, p.pool.region.bytes, 0, { shard: 0, cursor, bytesMax: COPY_BATCH_BYTES, above: 0, end: COPY_DONE }, limits, FRAME, 1);
    t.read += cpuMs() - a;
    a = cpuMs();
    const b = decodeBatch(u, 0, true);
    const slices = [];
    for (let i = 0; i < b.raws.length; i += ABSORB_SLICE) {
      const raws = b.raws.slice(i, i + ABSORB_SLICE);
      slices.push({ raws, es: verifyRaw(raws, 0, limits) });
    }
    t.verify += cpuMs() - a;
    a = cpuMs();
    for (const s of slices) absorbRaw(to.pool, to.shared, to.log, s.raws, s.es, limits);
    t.absorb += cpuMs() - a;
    [n, bytes, cursor] = [n + b.raws.length, bytes + b.bytes, b.next];
  }
  return { n, bytes };
}

function packed(p: Node, to: Node, t: Stages): { n: number; bytes: number } {
  let [cursor, n, bytes] = [0, 0, 0];
  while (cursor !== COPY_DONE) {
    let a = cpuMs();
    const u = readPackedBatch(p.shared.indexes[0]!, p.pool.region.bytes, 0, { shard: 0, cursor, bytesMax: COPY_BATCH_BYTES, above: 0, end: COPY_DONE, packed: true }, limits, FRAME, 1);
    t.read += cpuMs() - a;
    a = cpuMs();
    const b = decodePackedBatch(u, 0, limits);
    t.verify += cpuMs() - a;
    a = cpuMs();
    for (let i = 0; i < b.count; i += PACKED_SLICE) absorbPacked(to.pool, to.shared, to.log, b, i, Math.min(b.count, i + PACKED_SLICE), limits);
    t.absorb += cpuMs() - a;
    [n, bytes, cursor] = [n + b.count, bytes + b.bytes, b.next];
  }
  return { n, bytes };
}

function row(format: string, valueBytes: number, rep: number, n: number, bytes: number, wallMs: number, t: Stages): Row {
  const us = (ms: number) => +((ms * 1000) / n).toFixed(2);
  const target = t.verify + t.absorb;
  const busier = Math.max(t.read, target);
  return {
    format, valueBytes, rep, objects: n, MB: +(bytes / 1e6).toFixed(1),
    readUs: us(t.read), verifyUs: us(t.verify), landIndexUs: us(t.absorb), targetUs: us(target),
    // The most a copy could move with one core on each end, the busier end being the limit.
    objectsPerCoreSec: Math.round((n * 1000) / busier), MBpsPerCore: +(bytes / 1e3 / busier).toFixed(1),
    wallMs: Math.round(wallMs), wallObjectsPerSec: Math.round((n * 1000) / wallMs),
  };
}

export async function run(): Promise<Row[]> {
  const quick = process.argv.includes('--quick');
  const keys = flag('keys', quick ? 50_000 : 200_000);
  const reps = flag('reps', quick ? 2 : 3);
  recordParams({ quick, keys, reps, valueBytes: [100, 1000], batchBytes: COPY_BATCH_BYTES, slices: { v2: ABSORB_SLICE, packed: PACKED_SLICE }, persistence: 'pagecache', timing: 'process CPU per stage' });
  const dir = mkdtempSync(join(tmpdir(), 'rowan-copybatch-bench-'));
  const cluster = planCluster({ nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: join(dir, `n${id}`), workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })), shardCount: 1, replicationFactor: 3 });
  let pools = 0;
  const rows: Row[] = [];
  try {
    for (const valueBytes of [100, 1000]) {
      const segments = Math.ceil((keys * (valueBytes + 128)) / (4 << 20)) + 4;
      const open = (id: number): Node => {
        const pool = Pool.create(join(dir, `p${pools++}.pm`), { segmentCount: segments, segmentBytes: 4 << 20, mode: 'pagecache' });
        const shared = attachKvShared(createKvShared(cluster, id, keys, pool), pool.region);
        return { pool, shared, log: TLog.recover(pool, PROMOTION_ACTOR_ID, limits, OwnerRole.Digest) };
      };
      const p = open(0);
      const value = Buffer.alloc(valueBytes, 0x76);
      const es: RawEntry[] = Array.from({ length: keys }, (_, i) => ({ s: 0, v: i + 1, t: EntryType.Put, key: Buffer.from(`user${i}`), value }));
      absorbEntries(p.pool, p.shared, p.log, es, limits);
      for (let rep = 0; rep < reps; rep++) {
        for (const [format, copy] of [['v2', v2], ['packed', packed]] as const) {
          progress(`copybatch: ${valueBytes} B values, ${format}`, rep, reps);
          const to = open(1);
          to.pool.region.bytes.fill(0, to.pool.segmentOffset(0)); // fault its pages in first: alike for both
          const t: Stages = { read: 0, verify: 0, absorb: 0 };
          const w0 = performance.now();
          const { n, bytes } = copy(p, to, t);
          const wall = performance.now() - w0;
          const items = to.shared.indexes[0]!.items();
          if (n !== keys || items !== keys) throw new Error(`copybatch ${format}: ${n} copied, ${items} indexed of ${keys}`);
          rows.push({ ...row(format, valueBytes, rep, n, bytes, wall, t), loadAvg: +loadavg()[0]!.toFixed(1) });
          to.pool.close();
        }
      }
      p.pool.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return [...rows, ...medians(rows)];
}

/** Per format and value size, the median of each stage over the reps, and packed over v2. */
function medians(rows: Row[]): Row[] {
  const med = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const out: Row[] = [];
  for (const vb of [100, 1000]) {
    const of = (f: string) => rows.filter((r) => r.format === f && r.valueBytes === vb);
    const m = (f: string, k: string) => med(of(f).map((r) => Number(r[k])));
    for (const f of ['v2', 'packed']) {
      out.push({ format: `${f} median`, valueBytes: vb, readUs: m(f, 'readUs'), verifyUs: m(f, 'verifyUs'), landIndexUs: m(f, 'landIndexUs'), targetUs: m(f, 'targetUs'), objectsPerCoreSec: m(f, 'objectsPerCoreSec'), MBpsPerCore: m(f, 'MBpsPerCore'), wallObjectsPerSec: m(f, 'wallObjectsPerSec') });
    }
    out.push({ format: 'packed / v2', valueBytes: vb, targetUs: +(m('packed', 'targetUs') / m('v2', 'targetUs')).toFixed(2), readUs: +(m('packed', 'readUs') / m('v2', 'readUs')).toFixed(2), objectsPerCoreSec: +(m('packed', 'objectsPerCoreSec') / m('v2', 'objectsPerCoreSec')).toFixed(2) });
  }
  return out;
}
