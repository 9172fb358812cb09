// RespPeer (node-to-node forwarding, runtime/resp/client.ts): the commands forwarded during one turn of
// the event loop -- from every client connection read in it, not just one -- leave in one write.
import assert from 'node:assert/strict';
import { createServer, Socket, type AddressInfo } from 'node:net';
import { test } from 'node:test';
import { RespPeer } from '../../../../runtime/resp/client.js';

test('commands forwarded from different ticks of one loop turn leave in one socket write', async () => {
  // A peer answering +OK to every command it sees (each command here is one line: *1 $4 PING).
  const server = createServer((s) => {
    let got = '';
    let answered = 0;
    s.on('data', (d) => {
      got += d.toString('latin1');
      const seen = got.split('PING\r\n').length - 1;
      s.write('+OK\r\n'.repeat(seen - answered));
      answered = seen;
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  const peer = new RespPeer('127.0.0.1', port, 1024);
  const write = Socket.prototype.write;
  try {
    await peer.call(['PING']); // connected
    let writes = 0;
    Socket.prototype.write = function (this: Socket, ...a: unknown[]) {
      if (this.remotePort === port) writes++; // the forwarding link's side, not the peer's replies
      return (write as (...x: unknown[]) => boolean).apply(this, a);
    } as typeof write;
    // As two client connections' reads in one poll phase do: each call in its own tick.
    const first = peer.call(['PING']);
    const second = new Promise((resolve) => process.nextTick(() => process.nextTick(() => resolve(peer.call(['PING'])))));
    const replies = await Promise.all([first, second]);
    assert.equal(replies.length, 2);
    assert.equal(writes, 1, 'one write for both commands');
  } finally {
    Socket.prototype.write = write;
    peer.close();
    server.close();
  }
});
