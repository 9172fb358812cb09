// The tombstone sweep (issue 12, actors/clean/tombstones.ts), single-threaded on a real pool file with
// the real t-log, index, commit tracking and clean actor: a committed tombstone is dropped only once no
// older entry of its key is left on PM outside its own segment; never above the shard's CommitVer;
// never for a shard that is not eligible; a PUT racing the drop wins; and a cold start from the pool
// agrees with the tombstone-free index (the key stays deleted). A sweep without the PM check (the
// simulator's tombstone-drops-early mutation) resurrects the key at a cold start: the rule matters.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cleaner } from '../../../../actors/clean/gc.js';
import { TombstoneSweep, type TombstoneSweepOptions } from '../../../../actors/clean/tombstones.js';
import { CommitTracker } from '../../../../actors/shared/commit.js';
import { rebuildIndexes } from '../../../../actors/node/recovery.js';
import { attachKvShared, createKvShared, indexEntry, type KvShared } from '../../../../actors/shared/node-shared.js';
import { planCluster } from '../../../../config/cluster.js';
import { defaultLimits } from '../../../../config/limits.js';
import { monotonicClock } from '../../../../config/base/clock.js';
import { PoolEntryReader } from '../../../../shm/entry-reader.js';
import { hash64 } from '../../../../shm/hash.js';
import { EntryType, readEntryAt } from '../../../../shm/log.js';
import { Pool, SegmentState } from '../../../../shm/pool.js';
import { ShardIndex } from '../../../../shm/index.js';
import { TLog } from '../../../../shm/tlog.js';
import { Worker } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import type { TombstoneRaceReport, TombstoneRaceThreadData } from '../../../fixtures/tombstone-race-thread.js';

const raceThread = new URL('../../../fixtures/tombstone-race-thread.js', import.meta.url);

const enc = (s: string) => new TextEncoder().encode(s);
const SHARD = 0;

class NoPmCheckSweep extends TombstoneSweep {
  protected override occursElsewhere(): boolean {
    return false;
  }
}

/** One primary node's storage, driven by hand: PUT/DEL as the primary's write path does them. */
class Rig {
  readonly dir = mkdtempSync(join(tmpdir(), 'rowan-tombstones-'));
  readonly pool = Pool.create(join(this.dir, 'pool.pm'), { segmentCount: 32, segmentBytes: 16 * 1024 });
  readonly cluster = planCluster({
    nodes: [{ id: 0, host: '127.0.0.1', dataDir: this.dir, workerPorts: [1], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } }],
    shardCount: 1,
    replicationFactor: 1,
  });
  readonly buffers = createKvShared(this.cluster, 0, 1024, this.pool);
  readonly shared: KvShared = attachKvShared(this.buffers, this.pool.region);
  readonly commit = new CommitTracker(this.buffers.gc!, this.shared.versions, 1, 0, 1);
  readonly tlog = new TLog(this.pool, 0, defaultLimits);
  readonly reader = new PoolEntryReader(this.pool.region, defaultLimits);
  eligible = true;
  cleaner: Cleaner;

  constructor(o: { liveThresholdPercent?: number; makeSweep?: (o: TombstoneSweepOptions) => TombstoneSweep; beforeDrop?: TombstoneSweepOptions['beforeDrop'] } = {}) {
    this.cleaner = new Cleaner({
      pool: this.pool,
      shared: attachKvShared(this.buffers, this.pool.region),
      limits: defaultLimits,
      id: 0,
      count: 1,
      liveThresholdPercent: o.liveThresholdPercent ?? 75,
      tombstones: { eligible: () => this.eligible, now: () => 0, periodMs: 0, ...(o.beforeDrop ? { beforeDrop: o.beforeDrop } : {}) },
      ...(o.makeSweep ? { makeSweep: o.makeSweep } : {}),
    });
  }

  /** A PUT (value) or DEL (null) of `key`, finished: returns its address. */
  write(key: string, value: string | null): number {
    const k = enc(key);
    const v = this.commit.claim(SHARD);
    const addr = this.tlog.append({ type: value === null ? EntryType.Del : EntryType.Put, shard: SHARD, version: v, key: k, ...(value === null ? {} : { value: enc(value) }) }, true);
    indexEntry(this.shared, SHARD, k, hash64(k), addr, v, this.reader);
    this.tlog.release(addr);
    this.commit.finish(SHARD, v);
    return addr;
  }

  /** Overwrite a junk key until the t-log moves to a new segment (the old one fills and is sealed). */
  nextSegment(): void {
    const seg = this.tlog.segment;
    for (let i = 0; i < 10_000 && this.tlog.segment === seg; i++) this.write('junk', 'x'.repeat(200));
    assert.notEqual(this.tlog.segment, seg);
  }

  /** 'deleted' (a tombstone), 'absent' (no item) or the value, as this index answers. */
  read(key: string, shared: KvShared = this.shared): string {
    const k = enc(key);
    const addr = shared.indexes[SHARD]!.get(k, hash64(k), this.reader);
    if (addr === 0) return 'absent';
    const e = readEntryAt(this.pool.region.bytes, addr, defaultLimits)!;
    return e.type === EntryType.Del ? 'deleted' : new TextDecoder().decode(e.value);
  }

  /** Run one full sweep cycle (start, epoch, scan, decide) without cleaning anything else. */
  sweepCycle(): void {
    const s = this.cleaner.sweep!;
    const cycles = s.stats.cycles;
    for (let i = 0; i < 10_000 && (s.stats.cycles === cycles || s.busy); i++) s.step();
    assert.ok(s.stats.cycles > cycles && !s.busy, 'a sweep cycle ran to its end');
  }

  /** Clean passes until segment `seg` is Free (bounded). */
  cleanUntilFree(seg: number): void {
    for (let i = 0; i < 10_000 && this.pool.meta(seg).state !== SegmentState.Free; i++) this.cleaner.pass();
    assert.equal(this.pool.meta(seg).state, SegmentState.Free, `segment ${seg} was cleaned and freed`);
  }

  /** What a cold start from the pool as it is now would answer for `key`. */
  coldStartRead(key: string): string {
    const fresh = attachKvShared(createKvShared(this.cluster, 0, 1024, this.pool), this.pool.region);
    rebuildIndexes(this.pool, fresh, defaultLimits, monotonicClock);
    return this.read(key, fresh);
  }

  close(): void {
    this.pool.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

test('a tombstone stays while an older PUT of its key is on PM in another segment; it is dropped once that segment is freed, and a cold start keeps the key deleted', () => {
  const r = new Rig();
  try {
    const putSeg = r.pool.segmentOf(r.write('k', 'old'));
    r.nextSegment();
    const delAddr = r.write('k', null);
    assert.notEqual(r.pool.segmentOf(delAddr), putSeg);
    const sweep = r.cleaner.sweep!;
    r.sweepCycle();
    assert.equal(sweep.stats.dropped, 0, 'the PUT is still on PM: the tombstone must stay');
    assert.ok(sweep.stats.kept >= 1);
    assert.equal(r.read('k'), 'deleted');

    r.cleanUntilFree(putSeg);
    r.sweepCycle();
    assert.equal(r.read('k'), 'absent', 'nothing older is left: the tombstone is gone from the index');
    assert.ok(sweep.stats.dropped >= 1);
    // The tombstone's own segment still holds it; a cold start indexes it again (the key stays deleted).
    assert.ok(['absent', 'deleted'].includes(r.coldStartRead('k')));
    // Its bytes no longer count as live.
    const items = r.shared.indexes[SHARD]!.items();
    assert.equal(items, 1, 'only the junk key is indexed');
    assert.equal(ShardIndex.itemsIn(r.buffers.indexes[SHARD]!), items, 'what status reads without attaching');
  } finally {
    r.close();
  }
});

test('without the PM check (the tombstone-drops-early mutation) a cold start resurrects the deleted value', () => {
  const r = new Rig({ makeSweep: (o) => new NoPmCheckSweep(o) });
  try {
    // The PUT's segment stays (it is full of live keys); the DEL's segment is garbage once the
    // tombstone is dropped, and is cleaned away.
    const putSeg = r.pool.segmentOf(r.write('k', 'old'));
    for (let i = 0; r.tlog.segment === putSeg && i < 1000; i++) r.write(`live-${i}`, 'l'.repeat(200));
    const delSeg = r.pool.segmentOf(r.write('k', null));
    r.nextSegment();
    r.sweepCycle();
    assert.equal(r.read('k'), 'absent');
    r.cleanUntilFree(delSeg);
    assert.notEqual(r.pool.meta(putSeg).state, SegmentState.Free);
    assert.equal(r.coldStartRead('k'), 'old', 'the hazard the rule guards against');
  } finally {
    r.close();
  }
});

test('a tombstone above the shard\'s CommitVer (an older write still in flight) is never dropped; once it finishes, it is', () => {
  const r = new Rig();
  try {
    r.write('other', 'x');
    const inflight = r.commit.claim(SHARD); // a PUT of another key still replicating
    r.write('k', 'old');
    r.write('k', null);
    r.sweepCycle();
    r.sweepCycle();
    assert.equal(r.read('k'), 'deleted', 'CommitVer is below the DEL: it must stay');
    assert.equal(r.cleaner.sweep!.stats.candidates, 0);
    r.commit.finish(SHARD, inflight);
    r.sweepCycle();
    assert.equal(r.read('k'), 'absent', 'committed, and the PUT lies in the same segment as the DEL');
    assert.equal(r.coldStartRead('k'), 'deleted', 'a cold start finds the tombstone next to the PUT');
  } finally {
    r.close();
  }
});

test('a shard this node may not drop for (not primary since its start) keeps its tombstones', () => {
  const r = new Rig();
  try {
    r.eligible = false;
    r.write('k', 'old');
    r.write('k', null);
    for (let i = 0; i < 100; i++) r.cleaner.pass();
    assert.equal(r.read('k'), 'deleted');
    assert.equal(r.cleaner.sweep!.stats.cycles, 0, 'no cycle starts without an eligible shard');
    assert.equal(r.cleaner.sweep!.stats.dropped, 0);
    r.eligible = true;
    r.sweepCycle();
    assert.equal(r.read('k'), 'absent', 'the same tombstone drops once the shard is eligible');
  } finally {
    r.close();
  }
});

test('a PUT of the key between the sweep\'s decision and its removal CAS wins: the new value stays, also after a cold start', () => {
  let raced = 0;
  let rig: Rig | null = null;
  const r = new Rig({
    beforeDrop: (key) => {
      raced++;
      rig!.write(new TextDecoder().decode(key), 'new'); // replaces the tombstone's index item
    },
  });
  rig = r;
  try {
    r.write('k', 'old');
    r.write('k', null);
    r.sweepCycle();
    assert.equal(raced, 1, 'the race was forced');
    assert.equal(r.cleaner.sweep!.stats.dropped, 0, 'the CAS lost to the PUT');
    assert.equal(r.read('k'), 'new');
    assert.equal(r.coldStartRead('k'), 'new');
  } finally {
    r.close();
  }
});

test('a PUT or DEL right after a drop inserts the key afresh; live bytes follow every step', () => {
  const r = new Rig();
  try {
    for (let i = 0; i < 50; i++) {
      r.write(`u${i}`, 'v'.repeat(100));
      r.write(`u${i}`, null);
    }
    r.nextSegment();
    r.sweepCycle();
    for (let i = 0; i < 50; i++) assert.equal(r.read(`u${i}`), 'absent', `u${i}`);
    assert.equal(r.cleaner.sweep!.stats.dropped, 50);
    r.write('u7', 'again');
    r.write('u8', 'x');
    r.write('u8', null);
    assert.equal(r.read('u7'), 'again');
    assert.equal(r.read('u8'), 'deleted');
    assert.equal(r.coldStartRead('u7'), 'again');
    assert.equal(r.coldStartRead('u8'), 'deleted');
    for (let i = 0; i < 50; i++) if (i !== 7 && i !== 8) assert.ok(['absent', 'deleted'].includes(r.coldStartRead(`u${i}`)), `u${i} after a cold start`);
    // Live bytes equal what the index points at, segment by segment.
    const live = new Map<number, number>();
    r.shared.indexes[SHARD]!.forEach((addr) => {
      const seg = r.pool.segmentOf(addr);
      live.set(seg, (live.get(seg) ?? 0) + readEntryAt(r.pool.region.bytes, addr, defaultLimits)!.bytes);
    });
    for (let s = 0; s < r.pool.segmentCount; s++) assert.equal(r.shared.gc!.live.get(s), live.get(s) ?? 0, `live bytes of segment ${s}`);
  } finally {
    r.close();
  }
});

test('threaded: two writers PUT and DEL their keys while the clean actor relocates and drops tombstones -- every write reads back, nothing resurrects after a cold start', { timeout: 120_000 }, async () => {
  const r = new Rig({ liveThresholdPercent: 75 });
  r.cleaner = new Cleaner({
    pool: r.pool,
    shared: attachKvShared(r.buffers, r.pool.region),
    limits: defaultLimits,
    id: 0,
    count: 1,
    liveThresholdPercent: 75,
    segmentsPerPass: 2,
    tombstones: { eligible: () => true, now: () => performance.now(), periodMs: 1 },
  });
  try {
    const writers = 2;
    const keys = 2000;
    const spawn = (id: number) => {
      const data: TombstoneRaceThreadData = { id, writers, poolPath: r.pool.path, shared: r.buffers, keys, ops: 20_000, seed: 7 + id * 13 };
      const w = new Worker(raceThread, { workerData: data });
      return new Promise<TombstoneRaceReport>((resolve, reject) => {
        w.once('message', resolve);
        w.once('error', reject);
      });
    };
    const threads = [spawn(0), spawn(1)];
    let done = false;
    void Promise.allSettled(threads).then(() => (done = true));
    while (!done) if (r.cleaner.pass() === 0) await new Promise((res) => setTimeout(res, 1));
    const reports = await Promise.all(threads);
    for (const rep of reports) assert.equal(rep.error, undefined, rep.error);
    for (const rep of reports) assert.deepEqual(rep.wrong, [], 'a write did not read back');
    const final = Object.assign({}, ...reports.map((x) => x.final)) as Record<string, string | null>;
    for (const [k, v] of Object.entries(final)) {
      const now = r.read(k);
      assert.ok(v === null ? now === 'deleted' || now === 'absent' : now === v, `${k}: ${now}, last acknowledged ${v}`);
      const cold = r.coldStartRead(k);
      assert.ok(v === null ? cold === 'deleted' || cold === 'absent' : cold === v, `${k} after a cold start: ${cold}, last acknowledged ${v}`);
    }
    const s = r.cleaner.sweep!.stats;
    const puts = reports.reduce((a, x) => a + x.puts, 0);
    const dels = reports.reduce((a, x) => a + x.dels, 0);
    console.log(`# tombstone race: ${puts} PUTs, ${dels} DELs, ${s.cycles} sweep cycles, ${s.dropped} tombstones dropped, ${s.kept} kept, ${r.cleaner.stats.segments} segments reclaimed, ${r.cleaner.stats.lostRaces} relocations lost to writes`);
    assert.ok(dels > 1000 && s.dropped > 100, `the sweep dropped tombstones under the writers (${s.dropped} of ${dels} DELs)`);
    assert.ok(r.cleaner.stats.segments > r.pool.segmentCount, `GC turned the pool over (${r.cleaner.stats.segments} segments reclaimed)`);
  } finally {
    r.close();
  }
});

test('a node that only PUTs scans once, then skips its scans until a DEL is indexed', () => {
  const r = new Rig();
  try {
    const sweep = r.cleaner.sweep!;
    for (let i = 0; i < 50; i++) r.write(`k${i}`, 'v');
    r.sweepCycle(); // the first cycle scans: it meets no DEL entry
    const scanned = sweep.stats.scanned;
    assert.ok(scanned > 0);
    for (let i = 0; i < 50; i++) r.write(`k${i}`, 'w'); // more PUTs: no tombstone can appear
    for (let i = 0; i < 20; i++) sweep.step();
    assert.equal(sweep.stats.scanned, scanned, 'nothing scanned while no DEL was indexed');
    assert.equal(sweep.stats.cycles, 1);
    assert.ok(sweep.stats.skipped >= 20);
    r.write('k0', null); // a tombstone
    r.sweepCycle();
    assert.ok(sweep.stats.scanned > scanned, 'a DEL indexed since: the next cycle scans');
    assert.equal(r.read('k0'), 'absent', 'and drops the tombstone (its older PUTs lie in its own segment)');
    r.sweepCycle(); // that scan met the DEL entry (its segment still holds it): cycles go on
    assert.equal(sweep.stats.cycles, 3);
  } finally {
    r.close();
  }
});
