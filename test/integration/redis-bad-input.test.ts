// Bad RESP input against a real rowan node: each case gets Redis's protocol error and a closed
// connection (or an error reply, for well-formed nonsense); 10^5 fuzzed frames over sockets; the node
// keeps answering and its memory does not grow with the garbage.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { launchCluster, randomBasePort, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { raw, readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';

const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-bad-'));
let cl: LaunchedCluster;
let port = 0;

before(async () => {
  cl = launchCluster(dir, randomBasePort(), ['--shards', '6', '--nodes', '2', '--replication', '2']);
  await cl.ready;
  useClusterPassword(dir);
  port = respPorts(readCluster(dir)).single[0]!;
});

after(async () => {
  await stopCluster(cl.child);
  rmSync(dir, { recursive: true, force: true });
});

async function pid(): Promise<number> {
  const r = await raw(port, ['INFO server\r\nQUIT\r\n']);
  return Number(/process_id:(\d+)/.exec(r.text)![1]);
}

function rssKib(p: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))![1]);
}

test('protocol errors: Redis message, then the connection closes', async () => {
  const cases: [string | Buffer, RegExp][] = [
    ['*1\r\n$2147483648\r\n', /^-ERR Protocol error: invalid bulk length\r\n$/],
    ['*99999999999\r\n', /^-ERR Protocol error: invalid multibulk length\r\n$/],
    ['*2\r\n$3\r\nGET\r\n:1\r\n', /^-ERR Protocol error: expected '\$', got ':'\r\n$/],
    ['*1\r\n$3\r\nabcdef\r\n', /^-ERR Protocol error: expected CRLF after bulk string\r\n$/],
    ['*-x\r\n', /^-ERR Protocol error: invalid mbulk length\r\n$/],
    ['SET "abc\r\n', /^-ERR Protocol error: unbalanced quotes in request\r\n$/],
    [Buffer.alloc(70_000, 0x41), /^-ERR Protocol error: too big inline request\r\n$/],
    ['PING\r\n*1\r\n$99999999999\r\n', /^\+PONG\r\n-ERR Protocol error: invalid bulk length\r\n$/],
  ];
  for (const [wire, want] of cases) {
    const r = await raw(port, [wire]);
    assert.ok(r.closed, `closed after ${String(wire).slice(0, 30)}`);
    assert.match(r.text, want);
  }
});

test('truncated requests wait for the rest; well-formed nonsense gets error replies and the connection stays', async () => {
  const r = await raw(port, ['*2\r\n$3\r\nGET\r\n$5\r\nab', 'cde\r\n', '*1\r\n$4\r\nPING\r\n', '*3\r\n$3\r\nGET\r\n$1\r\na\r\n$1\r\nb\r\n', 'GET\r\n', Buffer.from('\x00\x01\xfe\r\n', 'latin1'), 'QUIT\r\n']);
  assert.ok(r.closed);
  assert.equal(
    r.text,
    "$-1\r\n+PONG\r\n-ERR wrong number of arguments for 'get' command\r\n-ERR wrong number of arguments for 'get' command\r\n" +
      "-ERR unknown command '\x00\x01\xef\xbf\xbd', with args beginning with: \r\n+OK\r\n",
  );
});

test('10^5 fuzzed frames over 100 connections: no crash, replies keep coming, memory bounded', async () => {
  const p = await pid();
  const rss0 = rssKib(p);
  let seed = 0x9e3779b9;
  const rnd = (n: number) => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  const pieces = ['*', '$', '\r\n', '-1', '0', '2', '3', '4294967296', 'GET', 'SET', 'k', ' ', '"', '*2\r\n$3\r\nGET\r\n$1\r\nk\r\n', '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n'];
  let answered = 0;
  for (let c = 0; c < 100; c++) {
    const frames: Buffer[] = [];
    for (let i = 0; i < 1000; i++) {
      let s = '';
      const n = 1 + rnd(6);
      for (let k = 0; k < n; k++) s += rnd(5) === 0 ? String.fromCharCode(rnd(256)) : pieces[rnd(pieces.length)]!;
      frames.push(Buffer.from(s, 'latin1'));
    }
    const r = await raw(port, [Buffer.concat(frames), '\r\n*1\r\n$4\r\nQUIT\r\n'], 3000);
    if (r.text.length > 0) answered++;
  }
  assert.ok(answered > 50, `${answered} of 100 fuzzed connections got replies`);
  const after = await raw(port, ['*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nQUIT\r\n']);
  assert.equal(after.text, '+PONG\r\n+OK\r\n');
  assert.equal(cl.child.exitCode, null, 'the cluster is still running');
  const grown = rssKib(p) - rss0;
  assert.ok(grown < 128 * 1024, `node RSS grew by ${grown} KiB`);
});

test('a slow huge bulk upload is bounded: refused from its declared length, nothing buffered for it', async () => {
  const r = await raw(port, ['*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1073741824\r\n', Buffer.alloc(1 << 20, 0x61)]);
  assert.ok(r.closed);
  assert.match(r.text, /^-ERR Protocol error: invalid bulk length\r\n$/);
});
