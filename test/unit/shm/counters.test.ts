import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ActorState, CounterWriter, I64, createCounters, readCounters } from '../../../shm/counters.js';

test('counters are local until published, then readable from the shared buffer', () => {
  const sab = createCounters();
  const w = new CounterWriter(sab);
  w.setIdentity(1234, 1);
  w.setState(ActorState.READY);
  w.local[I64.MESSAGES_IN] = 5;
  w.local[I64.TICKS] = 2 ** 40; // beyond Int32: counts are 64-bit
  assert.equal(readCounters(sab).counts.MESSAGES_IN, 0, 'not yet published');
  w.publish();
  const r = readCounters(sab);
  assert.deepEqual([r.state, r.tid, r.cpu], ['ready', 1234, 1]);
  assert.equal(r.counts.MESSAGES_IN, 5);
  assert.equal(r.counts.TICKS, 2 ** 40);
});

test('a restarted actor continues the counts of the one it replaces', () => {
  const sab = createCounters();
  const first = new CounterWriter(sab);
  first.local[I64.PINGS] = 7;
  first.publish();
  const second = new CounterWriter(sab);
  second.local[I64.PINGS]!++;
  second.publish();
  assert.equal(readCounters(sab).counts.PINGS, 8);
});
