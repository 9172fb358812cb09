// Tombstone floors (actors/shared/floors.ts): the shared floors only rise and a cold start seeds all three;
// a digest actor's floors become effective only once the segment they were raised in, and every
// segment digested before it, has left Used; the file store is durable per pool and ignores another
// pool's file. Plus the configuration cell's "primary moved" flag (rule 1P of the tombstone sweep).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFloorBuffer, FileFloorStore, FloorTracker, MemoryFloorStore, ShardFloors } from '../../../../actors/shared/floors.js';
import { ConfigCell } from '../../../../actors/shared/config-cell.js';
import { planCluster } from '../../../../config/cluster.js';

test('floors only rise; seed sets raw, effective and persisted', () => {
  const f = new ShardFloors(createFloorBuffer(4));
  f.raiseRaw(1, 10);
  f.raiseRaw(1, 7);
  assert.equal(f.raw(1), 10);
  assert.equal(f.effective(1), 0);
  f.raiseEffective(1, 5);
  f.raisePersisted(1, 3);
  assert.deepEqual([f.raw(1), f.effective(1), f.persisted(1)], [10, 5, 3]);
  f.seed(new Map([[2, 42], [9, 1]])); // a shard out of range is ignored
  assert.deepEqual([f.raw(2), f.effective(2), f.persisted(2)], [42, 42, 42]);
  assert.equal(f.raw(0), 0);
});

test('FloorTracker: a floor becomes effective only once its segment and every earlier one left Used', () => {
  fc.assert(
    fc.property(fc.array(fc.record({ floor: fc.option(fc.integer({ min: 1, max: 1000 })), leaves: fc.nat({ max: 20 }) }), { maxLength: 40 }), (segs) => {
      const t = new FloorTracker();
      const used = new Set<number>();
      let raw = 0;
      // Per segment: the raw floor of shard 0 after it.
      const after: number[] = [];
      segs.forEach((s, i) => {
        if (s.floor !== null) raw = Math.max(raw, s.floor);
        after.push(raw);
        used.add(i);
        t.digested(i, 1, s.floor !== null ? new Map([[0, raw]]) : null);
      });
      let effective = 0;
      // Segments leave Used in an arbitrary order; after each, the effective floor is the raw floor
      // after the longest prefix of segments all out of Used.
      const order = segs.map((s, i) => ({ i, k: s.leaves })).sort((a, b) => a.k - b.k || a.i - b.i);
      for (const { i } of order) {
        used.delete(i);
        for (const [, v] of t.advance((seg) => used.has(seg))) effective = Math.max(effective, v);
        let prefix = 0;
        while (prefix < segs.length && !used.has(prefix)) prefix++;
        assert.equal(effective, prefix === 0 ? 0 : after[prefix - 1]);
      }
      assert.equal(t.waiting, 0);
    }),
  );
});

test('FloorTracker: a segment reused under another seq has left Used in its noted life', () => {
  const t = new FloorTracker();
  t.digested(3, 7, new Map([[0, 9]]));
  assert.deepEqual([...t.advance((seg, seq) => seg === 3 && seq === 7)], []);
  assert.deepEqual([...t.advance((seg, seq) => seg === 3 && seq === 8)], [[0, 9]]); // segment 3 now lives under seq 8
});

test('FileFloorStore: durable per pool, another pool\'s file reads as no floors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-floors-'));
  try {
    const path = join(dir, 'tombstone-floors.json');
    assert.equal(new FileFloorStore(path, 'a').load().size, 0);
    new FileFloorStore(path, 'a').save(new Map([[3, 100], [1, 5]]));
    assert.deepEqual([...new FileFloorStore(path, 'a').load()].sort(), [[1, 5], [3, 100]]);
    assert.equal(new FileFloorStore(path, 'b').load().size, 0);
    writeFileSync(path, '{not json');
    assert.throws(() => new FileFloorStore(path, 'a').load(), /not valid JSON/);
    const m = new MemoryFloorStore();
    m.save(new Map([[0, 1]]));
    assert.deepEqual([...m.load()], [[0, 1]]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('ConfigCell.primaryMoved: set for good by a configuration naming another primary, even one moved back', () => {
  const c = planCluster({
    nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: `/tmp/rowan-n${id}`, workerPorts: [1], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
    shardCount: 3,
    replicationFactor: 2,
  });
  const cell = ConfigCell.create(c, false);
  assert.deepEqual([0, 1, 2].map((s) => cell.primaryMoved(s)), [false, false, false]);
  const away = structuredClone(c);
  away.term = c.term + 1;
  away.shards[1]!.primary = c.shards[1]!.backups[0]!;
  away.shards[1]!.backups = [c.shards[1]!.primary];
  cell.publish(away);
  const back = structuredClone(c);
  back.term = c.term + 2;
  cell.publish(back);
  assert.deepEqual([0, 1, 2].map((s) => cell.primaryMoved(s)), [false, true, false]);
  assert.equal(ConfigCell.attach(cell.buffer).primaryMoved(1), true);
});
