// shm/pool.ts: create/open round trips, the segment life cycle of Figure 6, PM_FULL, seq order, the meta
// word codec, crash leftovers (interrupted claims, a lagging seq counter), a model-based property test
// and concurrent allocation from two worker_threads that map the same file.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readdirSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { OwnerRole, Pool, SEGMENT_CLAIMING, SegmentState } from '../../../shm/pool.js';
import {
  META_OFFSET,
  SB_SEQ_COUNTER,
  decodeMeta,
  encodeMeta,
  type MetaFields,
} from '../../../shm/pool-layout.js';
import { ErrorCodes, RowanError } from '../../../config/base/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'rowan-pool-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const SEG = 64 * 1024;
let n = 0;
const freshPath = (): string => join(dir, `pool-${n++}.pm`);
const small = (segmentCount = 8): Pool => Pool.create(freshPath(), { segmentCount, segmentBytes: SEG });

function rejects(fn: () => unknown, code: string): RowanError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof RowanError, `expected a RowanError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail(`expected ${code}`);
}

/** Write bytes into a closed pool file, as a crash or a tool would leave them. */
function patch(path: string, offset: number, bytes: Buffer): void {
  const fd = openSync(path, 'r+');
  writeSync(fd, bytes, 0, bytes.length, offset);
  closeSync(fd);
}
function u64(v: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(v);
  return b;
}

// ---- files ----------------------------------------------------------------------------------------

test('create then open: same id and geometry; segments are aligned and never at offset 0', () => {
  const path = freshPath();
  const p = Pool.create(path, { segmentCount: 12, segmentBytes: SEG });
  assert.match(p.poolId, /^[0-9a-f]{32}$/);
  assert.equal(p.mode, 'pagecache');
  assert.equal(p.segmentCount, 12);
  assert.equal(p.segmentBytes, SEG);
  assert.deepEqual(p.counts(), { free: 12, using: 0, used: 0, committed: 0, claiming: 0 });
  for (let i = 0; i < 12; i++) {
    const off = p.segmentOffset(i);
    assert.ok(off > 0);
    assert.equal(off % SEG, 0);
    assert.equal(p.segmentOf(off), i);
    assert.equal(p.segmentOf(off + SEG - 1), i);
  }
  assert.equal(p.region.bytes.length, p.poolBytes);
  const id = p.poolId;
  p.close();
  const q = Pool.open(path);
  assert.equal(q.poolId, id);
  assert.equal(q.segmentCount, 12);
  q.close();
  assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith('.tmp')), [], 'no temporary file left behind');
});

test('create refuses an existing path; open of a missing one is POOL_NOT_FOUND', () => {
  const path = freshPath();
  writeFileSync(path, 'precious');
  rejects(() => Pool.create(path, { segmentCount: 2, segmentBytes: SEG }), ErrorCodes.POOL_EXISTS);
  rejects(() => Pool.open(join(dir, 'missing.pm')), ErrorCodes.POOL_NOT_FOUND);
});

test('create validates its arguments, including the 4 GiB view limit', () => {
  rejects(() => Pool.create(freshPath(), { segmentCount: 0, segmentBytes: SEG }), ErrorCodes.BAD_ARGUMENT);
  rejects(() => Pool.create(freshPath(), { segmentCount: 2, segmentBytes: 3000 }), ErrorCodes.BAD_ARGUMENT);
  rejects(() => Pool.create(freshPath(), { segmentCount: 1024, segmentBytes: 4 << 20 }), ErrorCodes.BAD_ARGUMENT);
});

test('openOrCreate creates, then opens, and refuses a different geometry', () => {
  const path = freshPath();
  const a = Pool.openOrCreate(path, { segmentCount: 4, segmentBytes: SEG });
  const id = a.poolId;
  a.allocate(OwnerRole.Worker, 0);
  a.close();
  const b = Pool.openOrCreate(path, { segmentCount: 4, segmentBytes: SEG });
  assert.equal(b.poolId, id);
  assert.equal(b.counts().using, 1);
  b.close();
  rejects(() => Pool.openOrCreate(path, { segmentCount: 5, segmentBytes: SEG }), ErrorCodes.BAD_CONFIG);
});

// ---- life cycle -----------------------------------------------------------------------------------

test('allocate: Free -> Using with owner and seq, in address order; state survives reopen', () => {
  const p = small();
  const a = p.allocate(OwnerRole.Worker, 3);
  const b = p.allocate(OwnerRole.Control, 0);
  assert.deepEqual([a, b], [0, 1]);
  assert.deepEqual(p.meta(a), { state: SegmentState.Using, role: OwnerRole.Worker, ownerId: 3, seq: 1 });
  assert.deepEqual(p.meta(b), { state: SegmentState.Using, role: OwnerRole.Control, ownerId: 0, seq: 2 });
  p.transition(a, SegmentState.Using, SegmentState.Committed);
  p.transition(b, SegmentState.Using, SegmentState.Used);
  const path = p.path;
  p.close();
  const q = Pool.open(path);
  assert.deepEqual(q.meta(a), { state: SegmentState.Committed, role: OwnerRole.Worker, ownerId: 3, seq: 1 });
  assert.equal(q.meta(b).state, SegmentState.Used);
  assert.equal(q.allocate(OwnerRole.Digest, 1), 2);
  assert.equal(q.meta(2).seq, 3, 'seq continues after reopen');
  q.close();
});

test('allocate zeroes a reused segment before handing it out', () => {
  const p = small(2);
  const i = p.allocate(OwnerRole.Worker, 0);
  const off = p.segmentOffset(i);
  p.region.bytes.fill(0xab, off, off + SEG);
  p.region.persist(off, SEG);
  p.transition(i, SegmentState.Using, SegmentState.Committed);
  p.free(i);
  assert.equal(p.allocate(OwnerRole.Worker, 1), i);
  assert.ok(p.region.bytes.subarray(off, off + SEG).every((b) => b === 0));
  p.close();
});

test('a never-allocated segment (seq 0) is handed out as the new file made it: zero, not written again', () => {
  const persisted: [number, number][] = [];
  const p = Pool.create(freshPath(), {
    segmentCount: 3,
    segmentBytes: SEG,
    wrapRegion: (r) => Object.assign(Object.create(r) as typeof r, { persist: (off: number, len: number) => (persisted.push([off, len]), r.persist(off, len)) }),
  });
  assert.equal(p.meta(0).seq, 0, 'a new pool: every segment never used');
  const i = p.allocate(OwnerRole.Worker, 0);
  const off = p.segmentOffset(i);
  assert.ok(p.region.bytes.subarray(off, off + SEG).every((b) => b === 0));
  assert.deepEqual(persisted.filter(([o, len]) => o < off + SEG && o + len > off), [], 'nothing of the segment written: only its meta word');
  // Its second life starts zeroed like any reused segment (the test above), its seq no longer 0.
  p.region.bytes.fill(0xcd, off, off + SEG);
  p.free(i);
  assert.notEqual(p.meta(i).seq, 0, 'a freed segment keeps the seq of its claim');
  persisted.length = 0;
  let again = -1;
  while (again !== i) again = p.allocate(OwnerRole.Worker, 1);
  assert.ok(p.region.bytes.subarray(off, off + SEG).every((b) => b === 0));
  assert.ok(persisted.some(([o, len]) => o <= off && o + len >= off + SEG), 'the reused one zeroed and persisted');
  p.close();
});

test('PM_FULL when no segment is free; a freed one is found again', () => {
  const p = small(3);
  for (let k = 0; k < 3; k++) p.allocate(OwnerRole.Worker, k);
  const err = rejects(() => p.allocate(OwnerRole.Worker, 9), ErrorCodes.PM_FULL);
  assert.match(err.message, /no free segment/);
  p.transition(1, SegmentState.Using, SegmentState.Free);
  assert.equal(p.allocate(OwnerRole.Clean, 2), 1);
  p.close();
});

test('a GC reserve: other roles get PM_FULL while only the reserve is free; a DEL may take part of it, Clean all', () => {
  const path = freshPath();
  Pool.create(path, { segmentCount: 6, segmentBytes: SEG }).close();
  const p = Pool.open(path, { reserveSegments: 2 });
  for (let k = 0; k < 4; k++) p.allocate(OwnerRole.Worker, k);
  assert.equal(p.freeCount(), 2);
  assert.deepEqual(p.segmentsInState(SegmentState.Free), p.segments({ state: SegmentState.Free }).sort((x, y) => x - y));
  assert.deepEqual(p.segmentsInState(SegmentState.Using), [0, 1, 2, 3]);
  const err = rejects(() => p.allocate(OwnerRole.Control, 0), ErrorCodes.PM_FULL);
  assert.match(err.message, /kept back for garbage collection/);
  // An allocation that makes room (a DEL's) may leave fewer free, never more than the reserve's worth.
  rejects(() => p.allocate(OwnerRole.Worker, 5, 9), ErrorCodes.PM_FULL);
  const del = p.allocate(OwnerRole.Worker, 5, 1);
  assert.equal(p.freeCount(), 1);
  rejects(() => p.allocate(OwnerRole.Worker, 5, 1), ErrorCodes.PM_FULL);
  const a = p.allocate(OwnerRole.Clean, 0);
  assert.notEqual(a, del);
  rejects(() => p.allocate(OwnerRole.Clean, 0), ErrorCodes.PM_FULL);
  assert.throws(() => Pool.open(path, { reserveSegments: -1 }), /reserveSegments/);
  p.close();
});

test('only Figure 6 transitions; the from-state must match', () => {
  const p = small(2);
  const i = p.allocate(OwnerRole.Control, 0);
  const S = SegmentState;
  for (const [from, to] of [
    [S.Free, S.Using],
    [S.Used, S.Using],
    [S.Committed, S.Used],
    [S.Committed, S.Using],
    [S.Used, S.Free],
    [S.Using, S.Using],
  ] as const) {
    rejects(() => p.transition(i, from, to), ErrorCodes.SEGMENT_STATE);
  }
  const e = rejects(() => p.transition(i, S.Used, S.Committed), ErrorCodes.SEGMENT_STATE);
  assert.match(e.message, /is Using, not Used/);
  p.transition(i, S.Using, S.Used);
  rejects(() => p.free(i), ErrorCodes.SEGMENT_STATE);
  p.transition(i, S.Used, S.Committed);
  p.free(i);
  assert.equal(p.meta(i).state, S.Free);
  rejects(() => p.free(i), ErrorCodes.SEGMENT_STATE);
  p.close();
});

test('segments() lists in seq order, not index order, and filters by state, role and owner', () => {
  const p = small(4);
  const a = p.allocate(OwnerRole.Worker, 1); // 0
  const b = p.allocate(OwnerRole.Worker, 1); // 1
  p.allocate(OwnerRole.Worker, 2); // 2
  p.transition(a, SegmentState.Using, SegmentState.Committed);
  p.free(a);
  const c = p.allocate(OwnerRole.Worker, 1); // reuses 0 with a higher seq
  assert.equal(c, a);
  assert.deepEqual(p.segments({ role: OwnerRole.Worker, ownerId: 1 }), [b, c]);
  assert.deepEqual(p.segments({ state: SegmentState.Free }), [3]);
  assert.deepEqual(p.segments({ ownerId: 2 }), [2]);
  assert.deepEqual(p.segments(), [3, b, 2, c], 'never-used (seq 0) first');
  p.close();
});

test('use after close is an invariant error', () => {
  const p = small(2);
  p.close();
  p.close();
  assert.throws(() => p.allocate(OwnerRole.Worker, 0), { code: 'ROWAN_ERR_INVARIANT' });
  assert.throws(() => p.meta(0), { code: 'ROWAN_ERR_INVARIANT' });
  assert.throws(() => p.counts(), { code: 'ROWAN_ERR_INVARIANT' });
});

// ---- meta word ------------------------------------------------------------------------------------

test('meta word: all-zero is Free/never used; every 1- and 2-bit flip of sample words is detected', () => {
  assert.deepEqual(decodeMeta(0n), { ok: true, fields: { state: 0, role: 0, ownerId: 0, seq: 0 } });
  const samples: MetaFields[] = [
    { state: SegmentState.Free, role: OwnerRole.None, ownerId: 0, seq: 0 },
    { state: SegmentState.Using, role: OwnerRole.Worker, ownerId: 1023, seq: 0xffffffff },
    { state: SegmentState.Committed, role: OwnerRole.Migration, ownerId: 517, seq: 123456 },
    { state: SEGMENT_CLAIMING, role: OwnerRole.Digest, ownerId: 7, seq: 1 },
  ];
  for (const f of samples) {
    const w = encodeMeta(f);
    assert.deepEqual(decodeMeta(w), { ok: true, fields: f });
    for (let a = 0n; a < 64n; a++) {
      assert.equal(decodeMeta(w ^ (1n << a)).ok, false, `flip of bit ${a} undetected`);
      for (let b = a + 1n; b < 64n; b++) {
        assert.equal(decodeMeta(w ^ (1n << a) ^ (1n << b)).ok, false, `flip of bits ${a},${b} undetected`);
      }
    }
  }
});

// ---- crash leftovers ------------------------------------------------------------------------------

test('an interrupted allocation (Claiming word) is visible and recovered to Free', () => {
  const p = small(4);
  const path = p.path;
  p.close();
  const claim = encodeMeta({ state: SEGMENT_CLAIMING, role: OwnerRole.Worker, ownerId: 5, seq: 9 });
  patch(path, META_OFFSET + 2 * 8, u64(claim));
  const q = Pool.open(path);
  assert.equal(q.meta(2).state, SEGMENT_CLAIMING);
  assert.equal(q.counts().claiming, 1);
  assert.deepEqual([0, 1, 3].map(() => q.allocate(OwnerRole.Worker, 0)), [0, 1, 3], 'a claim is not free');
  assert.deepEqual(q.recoverInterruptedAllocations(), [2]);
  assert.deepEqual(q.meta(2), { state: SegmentState.Free, role: OwnerRole.None, ownerId: 0, seq: 9 });
  assert.equal(q.allocate(OwnerRole.Clean, 0), 2);
  assert.ok(q.meta(2).seq > 9, 'the seq counter was raised past the claim');
  q.close();
});

test('a seq counter lagging the meta table (not persisted before a crash) is raised at open', () => {
  const p = small(4);
  for (let k = 0; k < 3; k++) p.allocate(OwnerRole.Worker, 0);
  const path = p.path;
  p.close();
  patch(path, SB_SEQ_COUNTER, u64(1n));
  const q = Pool.open(path);
  assert.equal(q.meta(q.allocate(OwnerRole.Worker, 0)).seq, 4);
  q.close();
});

// ---- model-based property test --------------------------------------------------------------------

type Op =
  | { t: 'alloc'; role: number; owner: number }
  | { t: 'trans'; i: number; from: number; to: number }
  | { t: 'free'; i: number }
  | { t: 'reopen' };

const SEGS = 6;
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ t: fc.constant('alloc' as const), role: fc.integer({ min: 1, max: 5 }), owner: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('trans' as const), i: fc.nat(SEGS - 1), from: fc.nat(3), to: fc.nat(3) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('free' as const), i: fc.nat(SEGS - 1) }) },
  { weight: 1, arbitrary: fc.constant({ t: 'reopen' as const }) },
);

const LEGAL = new Set(['1>2', '1>3', '2>3', '3>0', '1>0']);

interface ModelSeg {
  state: number;
  role: number;
  owner: number;
  seq: number;
}

function codeOf(fn: () => void): string | null {
  try {
    fn();
    return null;
  } catch (err) {
    if (err instanceof RowanError) return err.code;
    throw err;
  }
}

test('property: random allocate/transition/free/reopen sequences match a model', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 40 }), (ops) => {
      let pool = small(SEGS);
      const model: ModelSeg[] = Array.from({ length: SEGS }, () => ({ state: 0, role: 0, owner: 0, seq: 0 }));
      let lastSeq = 0;
      try {
        for (const op of ops) {
          if (op.t === 'alloc') {
            const want = model.findIndex((m) => m.state === SegmentState.Free);
            if (want === -1) {
              assert.equal(codeOf(() => pool.allocate(op.role as OwnerRole, op.owner)), ErrorCodes.PM_FULL);
              continue;
            }
            const got = pool.allocate(op.role as OwnerRole, op.owner);
            assert.equal(got, want, 'lowest free index first');
            const seq = pool.meta(got).seq;
            assert.ok(seq > lastSeq, 'seq increases');
            lastSeq = seq;
            model[got] = { state: SegmentState.Using, role: op.role, owner: op.owner, seq };
          } else if (op.t === 'trans') {
            const ok = LEGAL.has(`${op.from}>${op.to}`) && model[op.i]!.state === op.from;
            const code = codeOf(() => pool.transition(op.i, op.from as SegmentState, op.to as SegmentState));
            assert.equal(code, ok ? null : ErrorCodes.SEGMENT_STATE);
            if (ok) setState(model[op.i]!, op.to);
          } else if (op.t === 'free') {
            const s = model[op.i]!.state;
            const ok = s === SegmentState.Committed || s === SegmentState.Using;
            assert.equal(codeOf(() => pool.free(op.i)), ok ? null : ErrorCodes.SEGMENT_STATE);
            if (ok) setState(model[op.i]!, SegmentState.Free);
          } else {
            const path = pool.path;
            pool.close();
            pool = Pool.open(path);
          }
          checkAgainst(pool, model);
        }
      } finally {
        pool.close();
        rmSync(pool.path);
      }
    }),
    { numRuns: 60 },
  );
});

function setState(m: ModelSeg, to: number): void {
  m.state = to;
  if (to === SegmentState.Free) {
    m.role = 0;
    m.owner = 0;
  }
}

function checkAgainst(pool: Pool, model: ModelSeg[]): void {
  model.forEach((m, i) => assert.deepEqual(pool.meta(i), { state: m.state, role: m.role, ownerId: m.owner, seq: m.seq }));
  const count = (s: number) => model.filter((m) => m.state === s).length;
  assert.deepEqual(pool.counts(), {
    free: count(0),
    using: count(1),
    used: count(2),
    committed: count(3),
    claiming: 0,
  });
  const using = pool.segments({ state: SegmentState.Using });
  const seqs = using.map((i) => model[i]!.seq);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
}

// ---- concurrency ----------------------------------------------------------------------------------

// Each worker maps the pool itself (its own Pool, own DRAM hint). Rounds: both allocate until PM_FULL,
// report, then free everything they got; a barrier keeps the rounds in step. Small segments keep the
// zeroing short, so the two allocators spend their time racing for the same meta words. A worker that
// fails raises the abort flag so that its peer leaves the barrier instead of waiting forever.
const workerCode = `
const { parentPort, workerData } = require('node:worker_threads');
const { poolUrl, path, id, rounds, barrier } = workerData;
const b = new Int32Array(barrier); // [0] arrivals, [1] abort flag
let phase = 0;
function sync() {
  phase++;
  Atomics.add(b, 0, 1);
  Atomics.notify(b, 0);
  for (;;) {
    if (Atomics.load(b, 1) !== 0) throw new Error('peer failed');
    const v = Atomics.load(b, 0);
    if (v >= 2 * phase) return;
    Atomics.wait(b, 0, v, 20);
  }
}
import(poolUrl).then(({ Pool, OwnerRole, SegmentState }) => {
  const pool = Pool.open(path);
  for (let r = 0; r < rounds; r++) {
    sync();
    const got = [];
    for (;;) {
      try { got.push(pool.allocate(OwnerRole.Worker, id)); }
      catch (e) { if (e.code === 'ROWAN_ERR_PM_FULL') break; throw e; }
    }
    const owned = got.every((i) => pool.meta(i).ownerId === id && pool.meta(i).state === SegmentState.Using);
    parentPort.postMessage({ round: r, got, owned });
    sync();
    for (const i of got) { pool.transition(i, SegmentState.Using, SegmentState.Committed); pool.free(i); }
  }
  pool.close();
}).catch((e) => {
  Atomics.store(b, 1, 1);
  Atomics.notify(b, 0);
  parentPort.postMessage({ error: String((e && e.stack) || e) });
});
`;

test('two worker_threads allocating from one mapped file never get the same segment', { timeout: 60_000 }, async () => {
  const segments = 256;
  const rounds = 16;
  const p = Pool.create(freshPath(), { segmentCount: segments, segmentBytes: 4096 });
  const path = p.path;
  p.close();
  const barrier = new SharedArrayBuffer(8);
  const poolUrl = new URL('../../../shm/pool.js', import.meta.url).href;
  const results: Array<Array<{ got: number[]; owned: boolean }>> = [[], []];
  const errors: string[] = [];
  const run = (id: number) =>
    new Promise<void>((resolve, reject) => {
      const w = new Worker(workerCode, { eval: true, workerData: { poolUrl, path, id, rounds, barrier } });
      w.on('message', (m: { error?: string; got: number[]; owned: boolean }) => {
        if (m.error) errors.push(`worker ${id}: ${m.error}`);
        else results[id]!.push(m);
      });
      w.on('error', reject);
      w.on('exit', () => resolve());
    });
  await Promise.all([run(0), run(1)]);
  assert.deepEqual(errors, []);
  for (let r = 0; r < rounds; r++) {
    const a = results[0]![r]!;
    const b = results[1]![r]!;
    assert.ok(a.owned && b.owned, `round ${r}: each worker owns what it got`);
    const all = [...a.got, ...b.got];
    assert.equal(new Set(all).size, all.length, `round ${r}: a segment was handed out twice`);
    assert.equal(all.length, segments, `round ${r}: every segment handed out once`);
  }
  const q = Pool.open(path);
  assert.deepEqual(q.counts(), { free: segments, using: 0, used: 0, committed: 0, claiming: 0 });
  q.close();
});
