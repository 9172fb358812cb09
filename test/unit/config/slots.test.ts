import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CLUSTER_FORMAT, planCluster, validateCluster } from '../../../config/cluster.js';
import { crc16, keySlot, shardOfKey, shardOfSlot, slotRangeOfShard, SLOT_COUNT } from '../../../config/slots.js';

const enc = (s: string) => Buffer.from(s);

test('crc16 is CRC16-XMODEM (the Redis Cluster spec check value)', () => {
  assert.equal(crc16(enc('123456789')), 0x31c3);
});

test('keySlot matches slots real Redis reports (CLUSTER KEYSLOT)', () => {
  // Values from Redis 7 `CLUSTER KEYSLOT`.
  assert.equal(keySlot(enc('foo')), 12182);
  assert.equal(keySlot(enc('bar')), 5061);
  assert.equal(keySlot(enc('hello')), 866);
  assert.equal(keySlot(enc('')), 0);
});

test('hash tags: the first non-empty {...} decides; empty {} and unclosed { do not', () => {
  assert.equal(keySlot(enc('{user1000}.following')), keySlot(enc('user1000')));
  assert.equal(keySlot(enc('a{user1000}b')), keySlot(enc('{user1000}x')));
  assert.equal(keySlot(enc('foo{}{bar}')), keySlot(enc('foo{}{bar}'.slice(0)))); // whole key hashed
  assert.notEqual(keySlot(enc('foo{}{bar}')), keySlot(enc('bar')));
  assert.equal(keySlot(enc('foo{{bar}}zap')), keySlot(enc('{bar')));
  assert.equal(keySlot(enc('foo{bar')), crc16(enc('foo{bar')) % SLOT_COUNT);
});

test('shards own contiguous slot ranges that tile the slot space', () => {
  for (const n of [1, 3, 7, 48, 1000, SLOT_COUNT]) {
    let next = 0;
    for (let s = 0; s < n; s++) {
      const r = slotRangeOfShard(s, n);
      assert.equal(r.first, next, `shard ${s}/${n} starts where the previous ended`);
      assert.ok(r.last >= r.first, `shard ${s}/${n} owns at least one slot`);
      assert.equal(shardOfSlot(r.first, n), s);
      assert.equal(shardOfSlot(r.last, n), s);
      next = r.last + 1;
    }
    assert.equal(next, SLOT_COUNT);
  }
  assert.equal(shardOfKey(enc('foo'), 48), shardOfSlot(12182, 48));
});

test('a format 1 cluster configuration is refused with ROWAN_ERR_CLUSTER_FORMAT, not misread', () => {
  const nodes = [0, 1].map((id) => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } }));
  const c = planCluster({ nodes, shardCount: 4, replicationFactor: 2 });
  assert.equal(c.format, CLUSTER_FORMAT);
  assert.throws(() => validateCluster({ ...c, format: 1 }), (e: Error & { code?: string }) => e.code === 'ROWAN_ERR_CLUSTER_FORMAT' && /64-bit hash/.test(e.message));
  assert.throws(() => validateCluster({ ...c, shardCount: SLOT_COUNT + 1 }), /shardCount/);
  assert.throws(() => validateCluster({ ...c, nodes: c.nodes.map((n) => ({ ...n, resp: { ports: [1, 2], clusterPorts: [3] } })) }), /resp\.ports/);
});
