// Garbage collection racing PUTs to the same keys (§4.4): two writer threads overwrite a small key set
// through t-logs in a tiny pool while a reader thread checks every key it reads, and the main thread
// runs Cleaner passes the whole time -- relocating live entries, waiting out read epochs and freeing
// segments that are then reallocated to the writers. No read may ever see a version older than one
// already acknowledged (resurrection) or an entry that is not the key's (a freed segment read after
// reuse), and at the end every key's index entry is its newest acknowledged version.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { Cleaner } from '../../../../actors/clean/gc.js';
import { planCluster } from '../../../../config/cluster.js';
import { defaultLimits } from '../../../../config/limits.js';
import { attachKvShared, createKvShared } from '../../../../actors/shared/node-shared.js';
import { PoolEntryReader } from '../../../../shm/entry-reader.js';
import { hash64 } from '../../../../shm/hash.js';
import { EntryType, readEntryAt, storedSizeAt } from '../../../../shm/log.js';
import { indexEntry, nextVersion } from '../../../../actors/shared/node-shared.js';
import { TLog } from '../../../../shm/tlog.js';
import { Pool } from '../../../../shm/pool.js';
import type { GcRaceReport, GcRaceThreadData } from '../../../fixtures/gc-race-thread.js';

const threadUrl = new URL('../../../fixtures/gc-race-thread.js', import.meta.url);

interface Round {
  keys: number;
  opsPerWriter: number;
  valueBytes: number;
  seed: number;
  /** Every n-th entry the cleaner copies, the main thread PUTs a newer version of that key between the
   *  copy and the index CAS: the race, forced. */
  racePutEvery?: number;
  /** Pool turnovers the cleaner must at least reach. */
  turnovers: number;
}

async function round({ keys, opsPerWriter, valueBytes, seed, racePutEvery, turnovers }: Round): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-gc-race-'));
  const poolPath = join(dir, 'pool.pm');
  const pool = Pool.create(poolPath, { segmentCount: 48, segmentBytes: 16 * 1024 });
  const shardCount = 4;
  const cluster = planCluster({
    nodes: [{ id: 0, host: '127.0.0.1', dataDir: dir, workerPorts: [1], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } }],
    shardCount,
    replicationFactor: 1,
  });
  const buffers = createKvShared(cluster, 0, keys * 2, pool);
  const shared = attachKvShared(buffers, pool.region);
  const acked = new SharedArrayBuffer(4 * (keys + 1));
  new Int32Array(acked)[keys] = 2; // writers running
  // The forced race: a PUT of the very key being moved, on the main thread (a third t-log), while the
  // cleaner holds its copy and has not moved the index item yet.
  const mainLog = new TLog(pool, 2, defaultLimits);
  const reader0 = new PoolEntryReader(pool.region, defaultLimits);
  let copies = 0;
  let racePuts = 0;
  const racePut = (key: Uint8Array, shard: number) => {
    if (!racePutEvery || ++copies % racePutEvery !== 0) return;
    const version = nextVersion(shared.versions, shard);
    let addr: number;
    try {
      addr = mainLog.append({ type: EntryType.Put, shard, version, key, value: new TextEncoder().encode(`v${version}:`.padEnd(valueBytes, String.fromCharCode(97 + (version % 26)))) }, true);
    } catch {
      return; // PM_FULL: no race this time
    }
    indexEntry(shared, shard, key, hash64(key), addr, version, reader0); // inside the cleaner's read epoch
    mainLog.release(addr);
    const i = Number(new TextDecoder().decode(key).slice(4));
    for (const a = new Int32Array(acked); ; ) {
      const cur = Atomics.load(a, i); // highest acknowledged version of key i
      if (cur >= version || Atomics.compareExchange(a, i, cur, version) === cur) break; // publishes ours
    }
    racePuts++;
  };
  const cleaner = new Cleaner({
    pool, shared, limits: defaultLimits, id: 0, count: 1, liveThresholdPercent: 75, segmentsPerPass: 2,
    ...(racePutEvery ? { beforeRelocate: racePut } : {}),
  });
  try {
    const spawn = (role: 'writer' | 'reader', id: number) => {
      const data: GcRaceThreadData = { role, id, poolPath, shared: buffers, acked, keys, shardCount, ops: opsPerWriter, valueBytes, seed: seed * 31 + id * 7 + (role === 'reader' ? 1000 : 0) };
      const w = new Worker(threadUrl, { workerData: data });
      return new Promise<GcRaceReport>((resolve, reject) => {
        w.once('message', resolve);
        w.once('error', reject);
      });
    };
    const threads = [spawn('writer', 0), spawn('writer', 1), spawn('reader', 0)];
    let done = false;
    void Promise.allSettled(threads).then(() => (done = true));
    while (!done) {
      if (cleaner.pass() === 0) await new Promise((r) => setTimeout(r, 1));
    }
    const reports = await Promise.all(threads);
    for (const rep of reports) assert.equal(rep.error, undefined, rep.error);
    const puts = reports.reduce((a, x) => a + x.puts, 0);
    const resurrected = reports.reduce((a, x) => a + x.resurrected, 0);
    const garbage = reports.reduce((a, x) => a + x.garbage, 0);
    assert.equal(resurrected, 0, 'a read saw a version older than an acknowledged one');
    assert.equal(garbage, 0, 'a read saw an entry that was not the key\'s');
    assert.ok(puts > opsPerWriter, `writers made progress (${puts} PUTs)`);
    // GC really ran many times under the writers, and the pool turned over several times.
    assert.ok(cleaner.stats.segments >= turnovers * pool.segmentCount, `segments reclaimed: ${cleaner.stats.segments}`);

    // Final state: every key at its newest acknowledged version; live bytes match the index.
    const reader = new PoolEntryReader(pool.region, defaultLimits);
    const ack = new Int32Array(acked);
    const enc = new TextEncoder();
    const live = new Map<number, number>();
    for (let i = 0; i < keys; i++) {
      const key = enc.encode(`key-${i}`);
      const addr = shared.indexes[i % shardCount]!.get(key, hash64(key), reader);
      if (ack[i] === 0) continue;
      assert.notEqual(addr, 0, `key-${i} lost`);
      const e = readEntryAt(pool.region.bytes, addr, defaultLimits)!;
      assert.equal(e.version, ack[i], `key-${i} is at its newest acknowledged version`);
      const seg = shared.gc!.live.segmentOf(addr);
      live.set(seg, (live.get(seg) ?? 0) + storedSizeAt(pool.region.bytes, addr, defaultLimits));
    }
    for (let s = 0; s < pool.segmentCount; s++) assert.equal(shared.gc!.live.get(s), live.get(s) ?? 0, `live bytes of segment ${s}`);
    if (racePutEvery) {
      assert.ok(racePuts > 50, `forced races: ${racePuts}`);
      assert.ok(cleaner.stats.lostRaces >= racePuts, `every forced race was lost by the move (${cleaner.stats.lostRaces} of ${racePuts})`);
    }
    console.log(`# gc race: keys=${keys} puts=${puts} gets=${reports[2]!.gets} reclaimed=${cleaner.stats.segments} segs, copied=${cleaner.stats.copiedEntries} entries, lost races=${cleaner.stats.lostRaces}, forced=${racePuts}, pmFull waits=${reports[0]!.pmFull + reports[1]!.pmFull}`);
  } finally {
    pool.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('GC racing PUTs to 16 hot keys never resurrects an older value', { timeout: 120_000 }, async () => {
  await round({ keys: 16, opsPerWriter: 20_000, valueBytes: 8, seed: 1, turnovers: 2 });
});

test('GC racing PUTs to 400 keys never resurrects an older value', { timeout: 120_000 }, async () => {
  await round({ keys: 400, opsPerWriter: 20_000, valueBytes: 200, seed: 2, turnovers: 5 });
});

test('a PUT between the cleaner\'s copy and its index CAS always wins, and nothing resurrects', { timeout: 120_000 }, async () => {
  await round({ keys: 400, opsPerWriter: 20_000, valueBytes: 200, seed: 3, racePutEvery: 3, turnovers: 3 });
});
