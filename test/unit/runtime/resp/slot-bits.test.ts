// The slots a connection's writes named, for WAIT (runtime/resp/slot-bits.ts): a bit per slot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SlotBits } from '../../../../runtime/resp/slot-bits.js';
import { backupsHolding } from '../../../../actors/worker/resp/wait.js';
import { planCluster } from '../../../../config/cluster.js';
import { SLOT_COUNT } from '../../../../config/slots.js';

test('a slot counts once, every slot from 0 to 16383 is kept, and they come back in order', () => {
  const s = new SlotBits();
  assert.equal(s.size, 0);
  assert.deepEqual([...s], []);
  for (const slot of [16383, 0, 7, 8, 7, 0, 9000]) s.add(slot);
  assert.equal(s.size, 5);
  assert.deepEqual([...s], [0, 7, 8, 9000, 16383]);
  assert.ok([...s].includes(9000) && ![...s].includes(9001));
  for (let slot = 0; slot < SLOT_COUNT; slot++) s.add(slot);
  assert.equal(s.size, SLOT_COUNT);
  assert.equal([...s].length, SLOT_COUNT);
});

test('WAIT counts the backups of the shards a connection wrote, from its slot bits as from a set', () => {
  const nodes = [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } }));
  const c = planCluster({ nodes, shardCount: 2, replicationFactor: 3 });
  const wrote = new SlotBits();
  assert.equal(backupsHolding(c, wrote), backupsHolding(c, new Set()), 'no write yet: every shard');
  wrote.add(0);
  wrote.add(16383);
  assert.equal(backupsHolding(c, wrote), backupsHolding(c, new Set([0, 16383])));
  assert.equal(backupsHolding(c, wrote), 2);
});
