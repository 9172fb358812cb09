// AsymNVM (cluster replication mode `asymnvm`): a front end SIGKILLed mid-load, then the back end's cold
// start replays the op log (actors/node/op-log-replay.ts via actors/node/recovery.ts). What the mode
// promises, checked:
//   - every acknowledged operation survives (the replayed state reads it, or a later write of its key);
//   - the history (the front end's recorded writes, then a read of every key from the replayed index)
//     is linearizable (test/check/linearizability.ts), a transaction's two writes included;
//   - a torn op-log record is detected and not applied, and nor is a complete record after it in the
//     same log (the replay stops there).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monotonicClock } from '../../config/base/clock.js';
import { planCluster } from '../../config/cluster.js';
import { defaultLimits } from '../../config/limits.js';
import { rebuildIndexes } from '../../actors/node/recovery.js';
import { attachKvShared, createKvShared, type KvShared } from '../../actors/shared/node-shared.js';
import { PoolEntryReader } from '../../shm/entry-reader.js';
import { hash64 } from '../../shm/hash.js';
import { encodeBlocks, EntryType, readEntryAt } from '../../shm/log.js';
import { encodeOpRecord, scanOpLog } from '../../shm/op-log.js';
import { OwnerRole, type Pool } from '../../shm/pool.js';
import { checkLinearizability, type Operation } from '../check/linearizability.js';
import { TestReceiver } from '../fixtures/rowan-receiver.js';
import { CLIENTS, keysByShard, SHARDS, type HistoryLine } from '../fixtures/asymnvm-front-end.js';

const child = new URL('../fixtures/asymnvm-front-end.js', import.meta.url).pathname;
const enc = new TextEncoder();
const dec = new TextDecoder();

/** Operations from the front end's history lines: a write without its ok has an unknown outcome. */
function historyOf(path: string): { ops: Operation[]; acked: number } {
  const lines = readFileSync(path, 'utf8').split('\n').filter((l) => l.length > 0);
  const open = new Map<string, HistoryLine>();
  const ops: Operation[] = [];
  let acked = 0;
  for (const l of lines) {
    let h: HistoryLine;
    try {
      h = JSON.parse(l) as HistoryLine;
    } catch {
      continue; // the last line, cut by the kill
    }
    const id = `${h.c}.${h.i}`;
    if (h.ev === 'invoke') open.set(id, h);
    else {
      const inv = open.get(id)!;
      open.delete(id);
      acked++;
      for (const w of inv.writes!) ops.push({ client: h.c, key: w.key, op: 'put', value: w.value, invoke: inv.t, response: h.t, outcome: 'ok' });
    }
  }
  for (const inv of open.values()) for (const w of inv.writes!) ops.push({ client: inv.c, key: w.key, op: 'put', value: w.value, invoke: inv.t, response: undefined, outcome: 'unknown' });
  return { ops, acked };
}

/** The value the replayed index holds for `key`, or null. */
function readKey(pool: Pool, shared: KvShared, key: string): string | null {
  const k = enc.encode(key);
  const reader = new PoolEntryReader(pool.region, defaultLimits);
  for (const ix of shared.indexes) {
    const addr = ix?.get(k, hash64(k), reader) ?? 0;
    if (addr === 0) continue;
    const e = readEntryAt(pool.region.bytes, addr, defaultLimits);
    return e && e.type === EntryType.Put ? dec.decode(e.value) : null;
  }
  return null;
}

/** Behind the last intact record of one op log: a torn record, then an intact one after it. */
function tearAfterTail(pool: Pool): void {
  for (const seg of pool.segments({ role: OwnerRole.Remote })) {
    const start = pool.segmentOffset(seg);
    const scan = scanOpLog(pool.region.bytes, start, start + pool.segmentBytes);
    if (scan.stop !== 'end' || scan.records.length === 0) continue;
    const seq = scan.records[scan.records.length - 1]!.seq;
    const rec = (key: string, s: number) => encodeOpRecord(encodeBlocks({ type: EntryType.Put, shard: 0, version: 1_000_000 + s, key: enc.encode(key), value: enc.encode(key) }, defaultLimits), s);
    const torn = rec('torn', seq + 1);
    torn.fill(0, torn.length - 40); // the write's end never landed
    const after = rec('after-torn', seq + 2);
    if (scan.at + torn.length + after.length > start + pool.segmentBytes) continue;
    pool.region.bytes.set(torn, scan.at);
    pool.region.bytes.set(after, scan.at + torn.length);
    return;
  }
  assert.fail('no op-log region with room behind its tail');
}

test('asymnvm: a front end killed mid-load; the back end replays its op log to a linearizable state with every ack, and stops at a torn record', { timeout: 120_000 }, async () => {
  const rx = new TestReceiver({ segmentBytes: 256 * 1024, segmentCount: 96, preallocate: 2, batch: 1, recycle: false });
  const history = join(rx.dataDir, 'history.jsonl');
  writeFileSync(history, '');
  try {
    const p = fork(child, [rx.dataDir, history], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    const exited = new Promise<number | null>((r) => p.once('exit', (code) => r(code)));
    // Killed once enough operations were acknowledged (the file is the front end's only output).
    for (;;) {
      const got = await Promise.race([exited.then(() => -1), new Promise<number>((r) => setTimeout(() => r(historyOf(history).acked), 20))]);
      assert.notEqual(got, -1, 'the front end exited by itself');
      if (got >= 400) break;
    }
    p.kill('SIGKILL');
    await exited;
    const { ops, acked } = historyOf(history);
    tearAfterTail(rx.pool);

    const c = planCluster({ nodes: [{ id: 0, host: '127.0.0.1', dataDir: rx.dataDir, workerPorts: [1], fabric: { kind: 'shm', host: '127.0.0.1', port: 2 } }], shardCount: SHARDS, replicationFactor: 1, replication: 'asymnvm' });
    const shared = attachKvShared(createKvShared(c, 0, 4096, rx.pool), rx.pool.region);
    const rep = rebuildIndexes(rx.pool, shared, defaultLimits, monotonicClock);
    assert.ok(rep.opLog.regions >= CLIENTS, `${rep.opLog.regions} op-log regions replayed`);
    assert.ok(rep.opLog.tornRegions >= 1, 'the torn record stopped a replay');
    assert.equal(readKey(rx.pool, shared, 'torn'), null, 'the torn record is not applied');
    assert.equal(readKey(rx.pool, shared, 'after-torn'), null, 'nor the intact record behind it');

    const t = performance.timeOrigin + performance.now();
    const keys = keysByShard().flat();
    const reads: Operation[] = keys.map((key) => ({ client: 100, key, op: 'get', output: readKey(rx.pool, shared, key), invoke: t, response: t + 1, outcome: 'ok' }));
    const res = checkLinearizability([...ops, ...reads]);
    assert.equal(res.ok, true, res.describe());
    // Every acknowledged write survives: its key reads its value or one written after it was acknowledged.
    const lastAcked = new Map<string, Operation>();
    for (const o of ops) if (o.outcome === 'ok' && (lastAcked.get(o.key)?.response ?? -1) < o.response!) lastAcked.set(o.key, o);
    for (const [key, o] of lastAcked) assert.notEqual(readKey(rx.pool, shared, key), null, `acknowledged ${key}=${o.value} lost`);
    const txns = ops.filter((o) => o.value!.endsWith('.1')).length;
    console.log(`asymnvm crash: ${acked} operations acknowledged, ${ops.length - ops.filter((o) => o.outcome === 'ok').length} writes in flight at the kill, ${txns} transactions; replayed ${rep.opLog.records} records from ${rep.opLog.regions} op-log regions, ${rep.opLog.tornRegions} stopped at a torn record`);
  } finally {
    rx.close();
  }
});
