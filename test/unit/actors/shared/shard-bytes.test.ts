// Live bytes per shard (actors/shared/gc-state.ts shardLive, issue 28): every index change moves an
// entry's bytes in and out of its shard's count as it does for its segment's, so the count is the
// shard's live bytes -- what a primary reports to the manager (actors/shared/shard-load.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createGcShared, LiveBytes, SHARD_UNIT_BYTES } from '../../../../actors/shared/gc-state.js';
import { primaryShardBytes } from '../../../../actors/shared/shard-load.js';
import { defaultLimits } from '../../../../config/limits.js';
import { planCluster } from '../../../../config/cluster.js';
import { encodeEntry, EntryType } from '../../../../shm/log.js';

test('added, replaced, moved and removed entries move their bytes in and out of their shard\'s count', () => {
  const region = new Uint8Array(64 * 1024);
  const live = new LiveBytes(createGcShared({ dataOffset: 0, segmentBytes: 16 * 1024, segmentCount: 4 }, 3), region, defaultLimits);
  const put = (at: number, shard: number, value: number) => encodeEntry({ type: EntryType.Put, shard, version: 1, key: new Uint8Array(8), value: new Uint8Array(value) }, region, at, defaultLimits);
  const units = (n: number) => Math.ceil(n / SHARD_UNIT_BYTES) * SHARD_UNIT_BYTES;
  const a = put(0, 1, 100);
  const b = put(4096, 1, 3000);
  const c = put(20 * 1024, 2, 10);
  live.added(0);
  live.upserted('inserted', -1, 20 * 1024);
  assert.equal(live.shardBytes(1), units(a));
  assert.equal(live.shardBytes(2), units(c));
  live.upserted('updated', 0, 4096); // the key's new entry replaces the old one
  assert.equal(live.shardBytes(1), units(b));
  region.copyWithin(40 * 1024, 4096, 4096 + b); // relocated by clean: the same bytes elsewhere
  live.moved(4096, 40 * 1024);
  assert.equal(live.shardBytes(1), units(b));
  live.removed(20 * 1024);
  assert.equal(live.shardBytes(2), 0);
  assert.equal(live.shardBytes(0), 0);
  live.reset();
  assert.equal(live.shardBytes(1), 0, 'a cold start recounts');
  const cfg = planCluster({ nodes: [0, 1].map((id) => ({ id, host: '127.0.0.1', dataDir: `/d/${id}`, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })), shardCount: 3, replicationFactor: 2 });
  const mine = cfg.shards.filter((s) => s.primary === 0).map((s) => s.id);
  assert.deepEqual(primaryShardBytes(cfg, 0, { shardBytes: (s) => 10 * s }), mine.flatMap((s) => [s, 10 * s]), 'a node reports the shards it is primary of');
});
