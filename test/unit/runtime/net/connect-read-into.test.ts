// connectSocket's readInto (runtime/net/tls.ts): a plain TCP connection that reads into one buffer it
// reuses still delivers every byte in order as 'data' views, and still says when the peer closed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { connectSocket } from '../../../../runtime/net/tls.js';

test('a connection reading into a reused buffer delivers the bytes in order, then close', async () => {
  const sent = Buffer.from(Array.from({ length: 5000 }, (_, i) => i % 251));
  const server = createServer((s) => {
    // Several writes, larger than the buffer together: the client reads them into it many times.
    for (let i = 0; i < sent.length; i += 700) s.write(sent.subarray(i, i + 700));
    s.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const into = Buffer.alloc(512);
    const { socket, ready } = connectSocket({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, noDelay: true, readInto: into }, null);
    assert.equal(ready, 'connect');
    const got: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => {
      assert.equal(chunk.buffer, into.buffer, 'a view of the reused buffer');
      got.push(Buffer.from(chunk)); // copied: the next read lands in the same memory
    });
    await new Promise<void>((r) => socket.on('close', () => r()));
    assert.deepEqual(Buffer.concat(got), sent);
    assert.ok(got.length >= Math.ceil(sent.length / into.length), `${got.length} reads of at most ${into.length} B`);
  } finally {
    server.close();
  }
});
