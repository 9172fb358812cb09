// The AsymNVM front end's stream (actors/baselines/asymnvm.ts): one writeAt per operation (a
// transaction's blocks in one record), records landing in sequence, and acknowledgements in log order
// -- a record that lands first waits for the earlier ones, and a failed record fails the later ones.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openReplicationStream } from '../../../../actors/baselines/replication-writers.js';
import type { AsymNvmStream } from '../../../../actors/baselines/asymnvm.js';
import type { RemoteRegion, RowanConnection, SenderStats } from '../../../../runtime/fabric/fabric.js';
import { OP_LOG_HEADER_BYTES, scanOpLog } from '../../../../shm/op-log.js';

/** A receiver's memory, regions of 4 KiB, and every writeAt held until the test lets it land or fail. */
class HeldConnection implements RowanConnection {
  readonly kind = 'shm' as const;
  readonly mem = new Uint8Array(64 * 1024);
  readonly held: Array<{ offset: number; bytes: Uint8Array; land: () => void; fail: (e: Error) => void }> = [];
  private next = 0;
  write(): Promise<number> {
    return Promise.reject(new Error('no two-sided writes here'));
  }
  writeAt(offset: number, bytes: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) =>
      this.held.push({ offset, bytes, land: () => (this.mem.set(bytes, offset), resolve()), fail: reject }),
    );
  }
  async read(offset: number, length: number): Promise<Uint8Array> {
    return this.mem.slice(offset, offset + length);
  }
  async allocateRegion(): Promise<RemoteRegion> {
    const segment = this.next++;
    return { segment, offset: segment * 4096, length: 4096 };
  }
  stats(): SenderStats {
    return { writes: 0, bytes: 0, retries: 0, noBufferWaits: 0 };
  }
  async close(): Promise<void> {}
}

const block = (n: number) => new Uint8Array(64).fill(n);
const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

test('one writeAt per operation, in sequence; acks in log order even when a later record lands first', async () => {
  const conn = new HeldConnection();
  const s = openReplicationStream('asymnvm', conn, { ownerId: 1 }) as AsymNvmStream;
  await s.prepare();
  const acked: number[] = [];
  const a = s.write(block(1)).then((at) => (acked.push(1), at));
  const b = s.writeMany([block(2), block(3), block(4)]).then((at) => (acked.push(2), at));
  await turns();
  assert.equal(conn.held.length, 2, 'one write per operation, the three blocks in one');
  conn.held[1]!.land();
  await turns();
  assert.deepEqual(acked, [], 'the second record landed, but the first has not: no ack');
  conn.held[0]!.land();
  const [atA, atB] = await Promise.all([a, b]);
  assert.deepEqual(acked, [1, 2]);
  assert.equal(atA, OP_LOG_HEADER_BYTES, 'a write resolves with its block offset');
  assert.deepEqual(conn.mem.subarray(atB, atB + 192), new Uint8Array([...block(2), ...block(3), ...block(4)]));
  const scan = scanOpLog(conn.mem, 0, 4096);
  assert.deepEqual([scan.records.map((r) => [r.seq, r.blocks]), scan.stop], [[[1, 1], [2, 3]], 'end']);
  assert.equal(s.stats().writes, 2);
});

test('a failed record fails every later one of its stream, landed or not', async () => {
  const conn = new HeldConnection();
  const s = openReplicationStream('asymnvm', conn, { ownerId: 1 }) as AsymNvmStream;
  await s.prepare();
  const first = s.write(block(1));
  const second = s.write(block(2));
  await turns();
  conn.held[1]!.land();
  conn.held[0]!.fail(new Error('link down'));
  await assert.rejects(first, /link down/);
  await assert.rejects(second, /link down/, 'the later record may not be acknowledged: a replay stops before it');
});
