// The binary client port's key writes hold the node's key locks (actors/worker/binary-writes.ts): a PUT,
// PUT_EXPIRES or DEL of a key whose lock the expiry sweep holds waits until the sweep lets go (else the
// sweep's DEL, decided on the old expired entry, could delete the PUT once acknowledged); other keys and
// other requests are not held up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SharedKeyLocks } from '../../../../actors/shared/key-locks.js';
import { lockingWrites } from '../../../../actors/worker/binary-writes.js';
import type { KvHandler } from '../../../../runtime/rpc/handler.js';

const key = (s: string) => new TextEncoder().encode(s);

function fakeWorker(calls: string[]): KvHandler {
  const dec = (k: Uint8Array) => new TextDecoder().decode(k);
  return {
    term: () => 7,
    put: async (k: Uint8Array) => void calls.push(`put ${dec(k)}`),
    putExpiring: async (k: Uint8Array) => void calls.push(`putExpiring ${dec(k)}`),
    del: async (k: Uint8Array) => void calls.push(`del ${dec(k)}`),
    get: async () => null,
    getReplica: async () => null,
    config: () => ({}) as never,
  } as unknown as KvHandler;
}

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

test('binary key writes wait while the key is locked (the expiry sweep deciding its DEL), and run once it is free', async () => {
  const locks = new SharedKeyLocks();
  const calls: string[] = [];
  const h = lockingWrites(fakeWorker(calls), locks);
  let release!: () => void;
  const held = locks.run([key('k')], () => new Promise<void>((r) => (release = r)));
  const writes = [h.put(key('k'), key('v'), 1), h.putExpiring!(key('k'), key('v'), 1, { kind: 1, ms: 10 } as never), h.del(key('k'), 1)];
  const other = h.put(key('other'), key('v'), 1);
  await other;
  await turns(5);
  assert.deepEqual(calls, ['put other'], 'no write of the locked key ran while its lock was held');
  release();
  await held;
  await Promise.all(writes);
  assert.deepEqual(calls, ['put other', 'put k', 'putExpiring k', 'del k'], 'in arrival order once free');
  assert.equal(h.term(), 7, 'other requests go to the worker unchanged');
});

test('a sweep that asks for the lock while a binary PUT holds it waits for the PUT to finish', async () => {
  const locks = new SharedKeyLocks();
  const order: string[] = [];
  let finishPut!: () => void;
  const worker = { ...fakeWorker([]), put: () => new Promise<void>((r) => (finishPut = () => { order.push('put indexed'); r(); })) } as unknown as KvHandler;
  const h = lockingWrites(worker, locks);
  const put = h.put(key('k'), key('v'), 1);
  const sweep = locks.run([key('k')], async () => void order.push('sweep looks'));
  await turns(5);
  assert.deepEqual(order, []);
  finishPut();
  await Promise.all([put, sweep]);
  assert.deepEqual(order, ['put indexed', 'sweep looks']);
});
