// FLUSHALL is not a DEL per key (issue 27): one FLUSH entry per shard empties the shard's index on the
// primary at once and on each backup once its digest applies the entry, and GC then reclaims the
// flushed entries' segments like any garbage: index items, live bytes and segments in use go back to
// what the keys written around the flush hold, on every replica.
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
const FLUSHED = 8000;
/** Reclaiming fails when nothing went down for this long. */
const STALL_MS = 60_000;

interface Sample {
  items: number;
  liveBytes: number;
  segments: number;
}

async function sample(file: string): Promise<Sample> {
  const st = await collectClusterStatus(file);
  const s: Sample = { items: 0, liveBytes: 0, segments: 0 };
  for (const n of st.nodes) {
    const g = n.status?.storage;
    assert.ok(g?.index, `node ${n.id} reports its index (${n.error ?? ''})`);
    s.items += g.index.items ?? 0;
    for (const grp of g.groups) {
      s.liveBytes += grp.liveBytes ?? 0;
      s.segments += grp.segments;
    }
  }
  return s;
}

test('FLUSHALL: index items at once, then live bytes and segments in use back to the keys kept, on every replica', { timeout: 600_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-flush-reclaim-'));
  const file = join(dir, 'cluster.json');
  const run = await launchClusterReady(dir, randomBasePort(), FLAGS);
  let io: Redis | null = null;
  try {
    const password = useClusterPassword(dir);
    io = new Redis({ port: respPorts(readCluster(dir)).single[0]!, password });
    const c = io;
    // Rewriting the kept keys keeps the b-logs moving: a backup digests a b-log segment once a later
    // one is written (kv-tombstones.test.ts), and GC cleans only committed segments.
    const putLive = async (prefix: string) => {
      const p = c.pipeline();
      for (let i = 0; i < LIVE; i++) p.set(`${prefix}:${i}`, `value-${i}`);
      for (const [e] of (await p.exec())!) assert.equal(e, null);
    };
    await putLive('before');
    const base = await sample(file);
    for (let i = 0; i < FLUSHED; i += 500) {
      const p = c.pipeline();
      for (let j = i; j < i + 500; j++) p.set(`gone:${j}`, 'x'.repeat(400));
      for (const [e] of (await p.exec())!) assert.equal(e, null);
    }
    let full = await sample(file);
    for (let t = Date.now(); full.items < base.items + FLUSHED && Date.now() - t < 30_000; full = await sample(file)) await new Promise((r) => setTimeout(r, 250));
    // On the primaries at once; on the backups as their digests reach the entries' b-log segments.
    assert.ok(full.items >= base.items + FLUSHED, `written and indexed: ${full.items} index items`);
    const t0 = Date.now();
    assert.equal(await io.flushall(), 'OK');
    const flushMs = Date.now() - t0;
    assert.equal(await io.dbsize(), 0);
    await putLive('after');
    const settled = (s: Sample) => s.items <= LIVE * 2 + 50 && s.liveBytes <= base.liveBytes + LIVE * 2 * 64 + 64 * 1024 && s.segments <= base.segments + 12;
    let end = await sample(file);
    let best = { ...end };
    for (let progressAt = Date.now(); !settled(end) && Date.now() - progressAt < STALL_MS; end = await sample(file)) {
      if (end.items < best.items || end.liveBytes < best.liveBytes || end.segments < best.segments) {
        best = { items: Math.min(best.items, end.items), liveBytes: Math.min(best.liveBytes, end.liveBytes), segments: Math.min(best.segments, end.segments) };
        progressAt = Date.now();
      }
      await putLive('after');
      await new Promise((r) => setTimeout(r, 100));
    }
    console.log(
      `# flush reclaim: FLUSHALL of ${FLUSHED} keys answered in ${flushMs} ms; index items ${base.items} -> ${full.items} -> ${end.items}, ` +
        `live bytes ${base.liveBytes} -> ${full.liveBytes} -> ${end.liveBytes}, segments in use ${base.segments} -> ${full.segments} -> ${end.segments} (${Date.now() - t0} ms after the flush)`,
    );
    assert.ok(settled(end), `index items, live bytes and segments back near the kept keys': ${JSON.stringify(end)} (base ${JSON.stringify(base)}), no progress for ${STALL_MS} ms`);
    for (let i = 0; i < FLUSHED; i += 397) assert.equal(await io.get(`gone:${i}`), null);
    for (let i = 0; i < LIVE; i++) assert.equal(await io.get(`after:${i}`), `value-${i}`);
    assert.equal(await io.dbsize(), LIVE);
  } finally {
    io?.disconnect();
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
