// Active expiry (issue 27): keys that expire are deleted without a client touching them -- the workers'
// expiry sweeps replicate a DEL for each (actors/worker/resp/expiry-sweep.ts), the tombstone sweep then
// drops the DELs -- so the index and the live bytes go back to what the long-lived keys hold, on the
// primaries and on the backups, and no expired key reads back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { launchClusterReady } from '../fixtures/cluster-retry.js';
import { collectClusterStatus } from '../../bin/cluster-status.js';
import { readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';

const FLAGS = ['--nodes', '3', '--replication', '2', '--shards', '6', '--pool-mib', '24', '--segment-kib', '256'];
const LIVE = 100;
const EXPIRING = 6000;
/** Reclaiming fails when neither index items nor live bytes went down for this long. */
const STALL_MS = 60_000;

interface Sample {
  items: number;
  liveBytes: number;
}

async function sample(file: string): Promise<Sample> {
  const st = await collectClusterStatus(file);
  const s: Sample = { items: 0, liveBytes: 0 };
  for (const n of st.nodes) {
    const g = n.status?.storage;
    assert.ok(g?.index, `node ${n.id} reports its index (${n.error ?? ''})`);
    s.items += g.index.items ?? 0;
    for (const grp of g.groups) s.liveBytes += grp.liveBytes ?? 0; // a 64-byte entry per long-lived key
  }
  return s;
}

async function waitFor(file: string, ok: (s: Sample) => boolean, ms: number): Promise<Sample> {
  const until = Date.now() + ms;
  let s = await sample(file);
  while (!ok(s) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 250));
    s = await sample(file);
  }
  return s;
}

test('expiring keys are reclaimed without a client touching them: index items and live bytes back to the long-lived keys on every replica', { timeout: 900_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-expiry-reclaim-'));
  const file = join(dir, 'cluster.json');
  const run = await launchClusterReady(dir, randomBasePort(), FLAGS);
  let io: Redis | null = null;
  try {
    const password = useClusterPassword(dir);
    io = new Redis({ port: respPorts(readCluster(dir)).single[0]!, password });
    const c = io;
    // Rewriting the long-lived keys with the values they have keeps the b-logs moving: a backup applies
    // (and drops tombstones from) a b-log segment once a later one is written (kv-tombstones.test.ts).
    const putLive = async () => {
      const live = c.pipeline();
      for (let i = 0; i < LIVE; i++) live.set(`live:${i}`, `value-${i}`);
      await live.exec();
    };
    await putLive();
    const base = await waitFor(file, (s) => s.items >= LIVE, 10_000);
    assert.ok(base.items >= LIVE, `the long-lived keys are indexed: ${base.items} items`);
    // Written with a deadline an hour ahead (so the sweeps see deadlines and leave them), counted
    // without a race against the clock, then given one a second ahead (PEXPIREAT: one more entry
    // per key, with the deadline) -- however long this machine takes to write them.
    const writeAll = async (args: (number | string)[]) => {
      for (let i = 0; i < EXPIRING; i += 500) {
        const p = c.pipeline();
        for (let j = i; j < i + 500; j++) p.call(args[0] as string, `exp:${j}`, ...args.slice(1));
        const rs = await p.exec();
        for (const [err] of rs!) assert.equal(err, null);
      }
    };
    await writeAll(['SET', 'x'.repeat(100), 'PXAT', Date.now() + 3_600_000]);
    const full = await waitFor(file, (s) => s.items >= base.items + EXPIRING, 30_000);
    assert.ok(full.items >= base.items + EXPIRING, `all written and indexed: ${full.items} index items`);
    for (let i = 0; i < EXPIRING; i += 997) assert.equal(await io.get(`exp:${i}`), 'x'.repeat(100));
    await writeAll(['PEXPIREAT', Date.now() + 1000]);
    const settled = (s: Sample) => s.items <= LIVE * 2 + 100 && s.liveBytes <= LIVE * 2 * 64 + 300 * 256;
    // Waited for as long as it makes progress: on a loaded machine the sweeps, the b-logs and the
    // tombstone sweeps move slowly (one run here took over 150 s), but they do not stop.
    let end = await sample(file);
    let best = { ...end };
    for (let progressAt = Date.now(); !settled(end) && Date.now() - progressAt < STALL_MS; end = await sample(file)) {
      if (end.items < best.items || end.liveBytes < best.liveBytes) {
        best = { items: Math.min(best.items, end.items), liveBytes: Math.min(best.liveBytes, end.liveBytes) };
        progressAt = Date.now();
      }
      await putLive();
      await new Promise((r) => setTimeout(r, 100));
    }
    console.log(`# expiry: ${EXPIRING} keys: ${full.items} index items before, ${end.items} after (${base.items} for the ${LIVE} long-lived keys); live bytes ${full.liveBytes} -> ${end.liveBytes} (${base.liveBytes})`);
    assert.ok(settled(end), `index items and live bytes back near the long-lived keys' (on two replicas each): ${end.items} items, ${end.liveBytes} live bytes, no progress for ${STALL_MS} ms`);
    const info = await io.info('stats');
    assert.match(info, /expired_keys:\d+/);
    for (let i = 0; i < EXPIRING; i += 97) assert.equal(await io.get(`exp:${i}`), null);
    for (let i = 0; i < LIVE; i++) assert.equal(await io.get(`live:${i}`), `value-${i}`);
  } finally {
    io?.disconnect();
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
