// The t-log: a chain of pool segments (Figure 6, primary path) and its recovery from the meta table.
// Runs against a small in-memory fake of the pool interface so the chain logic is tested in isolation;
// test/fault/log-crash.test.ts exercises the real pool file under SIGKILL.
import { describe, it } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { defaultLimits, type Limits } from '../../../config/limits.js';
import { ErrorCodes, RowanError } from '../../../config/base/errors.js';
import { LogAppender } from '../../../shm/appender.js';
import { EntryType, encodeEntry, readEntryAt, type EntryInput } from '../../../shm/log.js';
import { MemoryRegion } from '../../../config/base/region.js';
import { OwnerRole, Pool, SegmentState, type SegmentMeta } from '../../../shm/pool.js';
import { TLog, type TLogPool } from '../../../shm/tlog.js';

const SEG = 64 * 1024;
const L: Limits = { ...defaultLimits, segmentBytes: SEG, mtuBytes: 1024, valueBytesMax: 16 * 1024 };
const State = SegmentState;

/** The pool interface of shm/pool.ts over DRAM: allocate zeroes and stamps a growing seq. */
class FakePool implements TLogPool {
  readonly region: MemoryRegion;
  readonly segmentBytes = SEG;
  private readonly metas: SegmentMeta[];
  private nextSeq = 1;
  constructor(readonly segmentCount: number) {
    this.region = new MemoryRegion(segmentCount * SEG);
    this.metas = Array.from({ length: segmentCount }, (): SegmentMeta => ({ state: State.Free, role: OwnerRole.None, ownerId: 0, seq: 0 }));
  }
  segmentOffset(i: number): number {
    return i * SEG;
  }
  meta(i: number): SegmentMeta {
    return { ...this.metas[i]! };
  }
  allocate(role: OwnerRole, ownerId: number): number {
    const i = this.metas.findIndex((m) => m.state === State.Free);
    if (i < 0) throw new RowanError(ErrorCodes.PM_FULL, 'no free segment');
    this.region.bytes.fill(0, i * SEG, (i + 1) * SEG);
    this.metas[i] = { state: State.Using, role, ownerId, seq: this.nextSeq++ };
    return i;
  }
  transition(i: number, from: SegmentState, to: SegmentState): void {
    if (this.metas[i]!.state !== from) throw new RowanError(ErrorCodes.SEGMENT_STATE, `segment ${i} not in ${from}`);
    this.metas[i]!.state = to;
  }
  segments(f: { state?: number; role?: OwnerRole; ownerId?: number } = {}): number[] {
    return this.metas
      .map((m, i) => ({ m, i }))
      .filter(({ m }) => m.state !== State.Free && (f.state === undefined || m.state === f.state)
        && (f.role === undefined || m.role === f.role) && (f.ownerId === undefined || m.ownerId === f.ownerId))
      .sort((a, b) => a.m.seq - b.m.seq)
      .map(({ i }) => i);
  }
}

function entry(i: number, worker = 0): EntryInput {
  // Every seventh entry spans several 1 KiB blocks.
  const valueLen = i % 7 === 3 ? 2500 + (i % 5) * 300 : 40 + (i * 37) % 400;
  const value = new Uint8Array(valueLen).map((_, j) => (i * 13 + j + worker) & 0xff);
  return { type: EntryType.Put, shard: i % 4, version: worker * 1_000_000 + i + 1, key: new TextEncoder().encode(`k${i}`), value };
}

function versions(log: TLog): number[] {
  return [...log.entries()].map((e) => e.version);
}

describe('TLog', () => {
  it('a full segment with pending appends stays Using until the last is released, then commits', () => {
    const pool = new FakePool(8);
    const log = new TLog(pool, 0, L);
    const first: number[] = [];
    let i = 0;
    for (; log.segment === -1 || log.segment === 0; i++) {
      const at = log.append(entry(i), true);
      if (log.segment === 0) first.push(at);
    }
    // The append that did not fit sealed segment 0 while its appends were pending.
    assert.equal(pool.meta(0).state, State.Using);
    assert.equal(log.pendingAppends, first.length + 1);
    for (const at of first.slice(1)) log.release(at);
    assert.equal(pool.meta(0).state, State.Using, 'one append of segment 0 is still pending');
    log.release(first[0]!);
    assert.equal(pool.meta(0).state, State.Committed);
    assert.throws(() => log.release(first[0]!), /without a pending append/);
    // A crash with a sealed segment still waiting: recovery commits it and resumes in the newest.
    const pool2 = new FakePool(8);
    const log2 = new TLog(pool2, 3, L);
    let j = 0;
    while (log2.segment !== 1) log2.append(entry(j++), true);
    assert.equal(pool2.meta(0).state, State.Using);
    const again = TLog.recover(pool2, 3, L);
    assert.equal(pool2.meta(0).state, State.Committed);
    assert.equal(again.segment, 1);
  });

  it('appendRaw copies an intact entry that reads back the same at its new offset', () => {
    const pool = new FakePool(4);
    const log = new TLog(pool, 0, L);
    const at = log.append(entry(3)); // a multi-block entry
    const e = readEntryAt(pool.region.bytes, at, L)!;
    const to = new TLog(pool, 1, L, OwnerRole.Clean);
    const moved = to.appendRaw(pool.region.bytes.subarray(at, at + e.bytes));
    const m = readEntryAt(pool.region.bytes, moved, L)!;
    assert.notEqual(moved, at);
    assert.deepEqual([m.version, m.bytes, [...m.value]], [e.version, e.bytes, [...e.value]]);
  });

  it('chains segments, committing each full one before allocating the next', () => {
    const pool = new FakePool(8);
    const log = new TLog(pool, 0, L);
    assert.equal(log.segment, -1);
    const offsets: number[] = [];
    for (let i = 0; i < 300; i++) offsets.push(log.append(entry(i)));
    const chain = log.segments();
    assert.ok(chain.length >= 3, `expected several segments, got ${chain.length}`);
    assert.deepEqual(chain.map((s) => pool.meta(s).state), [...chain.slice(1).map(() => State.Committed), State.Using]);
    assert.equal(log.segment, chain.at(-1));
    offsets.forEach((off, i) => {
      const got = readEntryAt(pool.region.bytes, off, L);
      assert.ok(got);
      assert.equal(got.version, i + 1);
      assert.deepEqual(got.value, entry(i).value);
    });
    assert.deepEqual(versions(log), offsets.map((_, i) => i + 1));
    assert.ok(pool.region.persistCalls >= 300);
  });

  it('keeps workers apart', () => {
    const pool = new FakePool(8);
    const a = new TLog(pool, 1, L);
    const b = new TLog(pool, 2, L);
    for (let i = 0; i < 60; i++) {
      a.append(entry(i, 1));
      b.append(entry(i, 2));
    }
    assert.deepEqual(versions(a), Array.from({ length: 60 }, (_, i) => 1_000_001 + i));
    assert.deepEqual(versions(b), Array.from({ length: 60 }, (_, i) => 2_000_001 + i));
    assert.ok(a.segments().every((s) => pool.meta(s).ownerId === 1 && pool.meta(s).role === OwnerRole.Worker));
  });

  it('recovers after the last intact entry and clears a torn append', () => {
    const pool = new FakePool(8);
    const log = new TLog(pool, 0, L);
    for (let i = 0; i < 40; i++) log.append(entry(i));
    const tail = log.tail;
    // A torn multi-block append: every block but the last reached the log.
    const scratch = new Uint8Array(8192);
    const n = encodeEntry(entry(3), scratch, 0, L); // entry(3) spans blocks
    pool.region.bytes.set(scratch.subarray(0, n - 64), tail);

    const back = TLog.recover(pool, 0, L);
    assert.equal(back.tail, tail);
    assert.equal(back.segment, log.segment);
    assert.ok(pool.region.bytes.subarray(tail, tail + n).every((x) => x === 0), 'torn bytes past the tail are zeroed');
    for (let i = 40; i < 80; i++) back.append(entry(i));
    assert.deepEqual(versions(back), Array.from({ length: 80 }, (_, i) => i + 1));
  });

  it('recovers with no Using segment (crash between commit and allocate) and appends to a new one', () => {
    const pool = new FakePool(8);
    const log = new TLog(pool, 0, L);
    for (let i = 0; i < 10; i++) log.append(entry(i));
    log.seal();
    const back = TLog.recover(pool, 0, L);
    assert.equal(back.segment, -1);
    back.append(entry(10));
    assert.equal(back.segments().length, 2);
    assert.deepEqual(versions(back), Array.from({ length: 11 }, (_, i) => i + 1));
  });

  it('recovers a worker that never appended as empty', () => {
    const back = TLog.recover(new FakePool(2), 5, L);
    assert.equal(back.segment, -1);
    assert.deepEqual(versions(back), []);
  });

  it('reports PM_FULL and ENTRY_TOO_LARGE', () => {
    const pool = new FakePool(1);
    const log = new TLog(pool, 0, L);
    assert.throws(() => { for (let i = 0; ; i++) log.append(entry(i)); },
      (e: unknown) => (e as RowanError).code === ErrorCodes.PM_FULL);
    const tiny = new TLog({ ...pool, segmentBytes: 1024, region: pool.region } as unknown as TLogPool, 1, L);
    assert.throws(() => tiny.append(entry(3)), (e: unknown) => (e as RowanError).code === ErrorCodes.ENTRY_TOO_LARGE);
  });
});

describe('TLog on a real pool file', () => {
  it('survives close and reopen: recover resumes the chain where it ended', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rowan-tlog-'));
    try {
      const path = join(dir, 'pool.pm');
      const pool = Pool.create(path, { segmentCount: 6, segmentBytes: SEG, mode: 'pagecache' });
      const log = new TLog(pool, 3, L);
      for (let i = 0; i < 120; i++) log.append(entry(i));
      const tail = log.tail;
      pool.close();
      const again = Pool.open(path, { mode: 'pagecache' });
      try {
        const back = TLog.recover(again, 3, L);
        assert.equal(back.tail, tail);
        for (let i = 120; i < 140; i++) back.append(entry(i));
        assert.deepEqual(versions(back), Array.from({ length: 140 }, (_, i) => i + 1));
        assert.ok(back.segments().length >= 2);
      } finally {
        again.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('LogAppender', () => {
  it('throws SEGMENT_FULL when an entry does not fit and tracks tail and remaining', () => {
    const region = new MemoryRegion(4096);
    const app = new LogAppender(region, 1024, 2048, L);
    const off = app.append(entry(0)); // 64 + 40 B value -> 128 B
    assert.equal(off, 1024);
    assert.equal(app.tail, 1024 + 128);
    assert.equal(app.remaining, 1024 - 128);
    assert.throws(() => app.append(entry(3)), (e: unknown) => (e as RowanError).code === ErrorCodes.SEGMENT_FULL);
    assert.equal(app.tail, 1024 + 128, 'a refused append leaves the tail alone');
    const back = LogAppender.recover(region, 1024, 2048, L);
    assert.equal(back.tail, app.tail);
    assert.equal(back.recoveredEntries, 1);
  });
});
