// RespConnection's reply batching (issue 26): the replies of the requests one read brought leave in one
// socket write, even when they complete in different event-loop turns; a reply is never held behind a
// barrier request (WAIT, MULTI, ...), which may block for long.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { respLimits } from '../../../../runtime/resp/limits.js';
import type { RequestOrder, RespHandler } from '../../../../runtime/resp/resp-connection.js';
import { serveResp, type RespServer } from '../../../../runtime/resp/resp-server.js';
import { Simple, err, type Reply } from '../../../../runtime/resp/reply.js';

const frame = (args: string[]) => `*${args.length}\r\n` + args.map((a) => `$${a.length}\r\n${a}\r\n`).join('');

/** Turns of the event loop (setImmediate) before `n` resolves. */
function afterTurns(n: number, v: Reply): Promise<Reply> {
  return new Promise((resolve) => {
    const step = (left: number) => (left === 0 ? resolve(v) : setImmediate(() => step(left - 1)));
    step(n);
  });
}

/** LATER n x: answers x after n loop turns; BLOCK: a barrier answered when release() is called; PING: at once. */
function handler(released: Promise<void>): RespHandler {
  return {
    order: (args): RequestOrder => (args[0]!.toString() === 'BLOCK' ? 'barrier' : 'free'),
    execute: (args) => {
      const name = args[0]!.toString();
      if (name === 'LATER') return afterTurns(Number(args[1]!.toString()), args[2]!.toString());
      if (name === 'BLOCK') return released.then(() => new Simple('RELEASED'));
      return new Simple('PONG');
    },
    errorReply: () => err('ERR failed'),
  };
}

async function withServer(f: (srv: RespServer, client: Socket, release: () => void) => Promise<void>): Promise<void> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const srv = await serveResp({ host: '127.0.0.1', port: 0, handler: handler(released), limits: respLimits(1024 * 1024) });
  const client = connect(srv.port, '127.0.0.1');
  await new Promise<void>((r) => client.once('connect', () => r()));
  try {
    await f(srv, client, release);
  } finally {
    release();
    client.destroy();
    await srv.close();
  }
}

/** Count the server side's socket writes of the (only) connection. */
async function countWrites(srv: RespServer): Promise<{ n: number }> {
  while (srv.connections.size === 0) await new Promise((r) => setImmediate(r));
  const socket = [...srv.connections][0]!.socket;
  const count = { n: 0 };
  const write = socket.write.bind(socket) as (...a: unknown[]) => boolean;
  socket.write = ((...a: unknown[]) => {
    count.n++;
    return write(...a);
  }) as typeof socket.write;
  return count;
}

function readUntil(client: Socket, expected: string): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const on = (d: Buffer) => {
      got += d.toString('latin1');
      if (got.length >= expected.length) {
        client.off('data', on);
        resolve(got);
      }
    };
    client.on('data', on);
  });
}

test('the replies of one read leave in one write though they complete in different loop turns', async () => {
  await withServer(async (srv, client) => {
    const writes = await countWrites(srv);
    const expected = '$1\r\na\r\n$1\r\nb\r\n+PONG\r\n$1\r\nc\r\n';
    const got = readUntil(client, expected);
    client.write(frame(['LATER', '3', 'a']) + frame(['LATER', '1', 'b']) + frame(['PING']) + frame(['LATER', '6', 'c']));
    assert.equal(await got, expected);
    assert.equal(writes.n, 1, 'one socket write for the whole pipeline');
  });
});

test('replies already done are not held behind a barrier request', async () => {
  await withServer(async (srv, client, release) => {
    await countWrites(srv);
    // PING is done at once and BLOCK starts in the same read (nothing runs before it).
    const first = readUntil(client, '+PONG\r\n');
    client.write(frame(['PING']) + frame(['BLOCK']));
    assert.equal(await first, '+PONG\r\n', 'answered before BLOCK is released');
    const rest = readUntil(client, '+RELEASED\r\n');
    release();
    assert.equal(await rest, '+RELEASED\r\n');
  });
});
