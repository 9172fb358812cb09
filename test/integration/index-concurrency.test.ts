// Several worker_threads attach one ShardIndex and race on the same keys: upserts with globally unique
// per-key versions, lookups, then removes. The final table must equal the sequential model (every key
// points at its highest version, once), and no lookup may ever have returned another key's entry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { setTimeout as sleep } from 'node:timers/promises';
import { ShardIndex } from '../../shm/index.js';
import * as S from '../fixtures/index-shared.js';
import type { IndexWorkerData, IndexWorkerReport } from '../fixtures/index-worker.js';

const WORKERS = 3; // more threads than the 2 cores: preemption lands between a read and its CAS
const workerUrl = new URL('../fixtures/index-worker.js', import.meta.url);

interface Shared {
  ix: ShardIndex;
  log: S.SharedFakeLog;
  ctrl: Int32Array;
  base: Omit<IndexWorkerData, 'phase' | 'seed'>;
}

async function runPhase(sh: Shared, phase: IndexWorkerData['phase'], seed: number): Promise<IndexWorkerReport[]> {
  Atomics.store(sh.ctrl, S.C_READY, 0);
  Atomics.store(sh.ctrl, S.C_GO, 0);
  const workers = Array.from({ length: WORKERS }, (_, t) => {
    const data: IndexWorkerData = { ...sh.base, phase, seed: (seed * 7919 + t * 104729) | 1 };
    return new Worker(workerUrl, { workerData: data });
  });
  const reports = workers.map(
    (w) =>
      new Promise<IndexWorkerReport>((resolve, reject) => {
        w.once('message', resolve);
        w.once('error', reject);
        w.once('exit', (code) => reject(new Error(`index worker exited with ${code} before reporting`)));
      }),
  );
  while (Atomics.load(sh.ctrl, S.C_READY) < WORKERS) await sleep(5);
  // Opens the start barrier: all workers wake and start together.
  Atomics.store(sh.ctrl, S.C_GO, 1);
  Atomics.notify(sh.ctrl, S.C_GO);
  const out = await Promise.all(reports);
  await Promise.all(workers.map((w) => w.terminate()));
  for (const r of out) assert.equal(r.error, undefined, r.error);
  return out;
}

async function round(mode: S.HashMode, nKeys: number, ops: number, seed: number, grow = false): Promise<void> {
  // 'collide': 2 buckets of 7 items for 16 keys -> chains; 'spread': 512 buckets for 20k keys -> chains.
  // grow: 64 buckets and ONE overflow bucket to start with, so the threads grow the buffer as they race.
  const ix = grow
    ? ShardIndex.create({ buckets: 64, overflowBuckets: 1, overflowBucketsMax: 8192 })
    : mode === 'collide'
      ? ShardIndex.create({ buckets: 2, overflowBuckets: 8 })
      : ShardIndex.create({ buckets: 512, overflowBuckets: 4096 });
  const logSab = new SharedArrayBuffer(S.SharedFakeLog.bytes(WORKERS * ops + 1));
  const ctrlSab = new SharedArrayBuffer(S.ctrlBytes(nKeys));
  const sh: Shared = {
    ix,
    log: new S.SharedFakeLog(logSab, ctrlSab),
    ctrl: new Int32Array(ctrlSab),
    base: { indexSab: ix.buffer, logSab, ctrlSab, mode, nKeys, ops },
  };
  const label = `${mode}${grow ? ' growing' : ''} seed ${seed}`;

  const mixed = await runPhase(sh, 'mixed', seed);
  const sum = (f: (r: IndexWorkerReport) => number): number => mixed.reduce((a, r) => a + f(r), 0);
  assert.equal(sum((r) => r.wrongKey), 0, `${label}: lookups returned another key's entry`);
  assert.equal(sum((r) => r.nonMonotonic), 0, `${label}: a key's version went backwards`);
  assert.equal(sum((r) => r.lostWrite), 0, `${label}: an acknowledged upsert was not visible`);
  assert.equal(Atomics.load(sh.ctrl, S.C_UNWRITTEN), 0, `${label}: an unwritten record was reachable`);

  // Sequential model: each key upserted at least once maps to its maximal version, exactly once.
  const key = new Uint8Array(8);
  const hash = { hi: 0, lo: 0 };
  const slotsPerKey = new Uint32Array(nKeys);
  ix.forEach((addr) => slotsPerKey[sh.log.keyOf(addr)]!++);
  let present = 0;
  for (let k = 0; k < nKeys; k++) {
    const maxVersion = Atomics.load(sh.ctrl, S.keyField(k, S.K_VERSION));
    const inserted = Atomics.load(sh.ctrl, S.keyField(k, S.K_INSERTED));
    const addr = ix.get(S.writeKey(key, k), S.hashFor(mode, key, hash), sh.log);
    if (maxVersion === 0) {
      assert.equal(addr, 0, `${label}: key ${k} was never written`);
      continue;
    }
    present++;
    assert.equal(slotsPerKey[k], 1, `${label}: key ${k} occupies ${slotsPerKey[k]} slots`);
    assert.equal(inserted, 1, `${label}: key ${k} reported 'inserted' ${inserted} times`);
    assert.equal(sh.log.keyOf(addr), k);
    assert.equal(sh.log.versionAt(addr), maxVersion, `${label}: key ${k} not at its max version`);
  }
  const st = ix.stats();
  assert.equal(st.items, present);
  assert.equal(sum((r) => r.results.inserted), present);
  assert.equal(sum((r) => r.upserts), Atomics.load(sh.ctrl, S.C_NEXT_ADDR));
  assert.ok(st.maxChain > 1, `${label}: the test should exercise chains`);
  if (grow) assert.ok(st.overflowBuckets >= st.overflowUsed && st.overflowUsed > 64, `${label}: the overflow area should have grown (${st.overflowBuckets} buckets, ${st.overflowUsed} used)`);
  assert.ok(sum((r) => r.results.stale) > 0 || mode === 'spread', `${label}: expected stale races`);

  // Removal race: every worker tries to remove every key; each key must be removed exactly once.
  const removed = await runPhase(sh, 'remove', seed + 1);
  for (let k = 0; k < nKeys; k++) {
    const want = Atomics.load(sh.ctrl, S.keyField(k, S.K_VERSION)) > 0 ? 1 : 0;
    assert.equal(Atomics.load(sh.ctrl, S.keyField(k, S.K_REMOVED)), want, `${label}: key ${k} removal count`);
  }
  assert.equal(removed.reduce((a, r) => a + r.removed, 0), present);
  assert.equal(ix.stats().items, 0);
  let left = 0;
  ix.forEach(() => left++);
  assert.equal(left, 0);

  const t = (f: (r: IndexWorkerReport) => number): number => sum(f);
  console.log(
    `# ${label}: ${WORKERS} threads, ${t((r) => r.upserts)} upserts (${t((r) => r.results.inserted)} inserted, ` +
      `${t((r) => r.results.updated)} updated, ${t((r) => r.results.stale)} stale), ${t((r) => r.gets)} gets ` +
      `(${t((r) => r.hits)} hits), ${present} keys, max chain ${st.maxChain}, overflow used ${st.overflowUsed}`,
  );
}

for (const seed of [1, 2, 3]) {
  test(`few keys, colliding tags and buckets, seed ${seed}`, async () => {
    await round('collide', 16, 150_000, seed);
  });
  test(`many keys forcing chains, seed ${seed}`, async () => {
    await round('spread', 20_000, 150_000, seed);
  });
  test(`many keys into a table that grows while the threads race, seed ${seed}`, async () => {
    await round('spread', 20_000, 150_000, seed, true);
  });
}
