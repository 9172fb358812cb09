// Before a connection has authenticated it holds little and not for long (issue 27, "Pre-auth limits on
// every port"). Redis ports: as Redis 6.2+, an unauthenticated request of more than 10 arguments or with
// a bulk string over 16 KiB gets its protocol error and the connection closes (six unauthenticated 64 MiB
// requests took a node from 159 to 773 MiB RSS before); client port and fabric NIC: frames before AUTH
// are small. Every port closes a connection that has not authenticated within authDeadlineMs (set
// short here through ROWAN_AUTH_DEADLINE_MS; the tests wait for the close, bounded by a failure timeout).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { newNonce } from '../../config/base/secret.js';
import { FrameReader, Op, PROTOCOL_VERSION, decodeResponse, encodeRequest, Status } from '../../runtime/rpc/frames.js';
import { defaultLimits } from '../../config/limits.js';
import * as nic from '../../runtime/fabric/nic-frames.js';
import { launchReadyCluster, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { nodePids } from '../fixtures/failover-cluster.js';
import { rawPeer } from '../fixtures/nic-raw-peer.js';
import { raw, readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';
import { eventually } from '../fixtures/eventually.js';

const dir = mkdtempSync(join(tmpdir(), 'rowan-preauth-'));
/** The deadline under test; a connection still open this long after it is past is a failure. */
const DEADLINE_MS = 3000;
const CLOSE_WAIT_MS = 60_000;
let cl: LaunchedCluster;

before(async () => {
  process.env.ROWAN_AUTH_DEADLINE_MS = String(DEADLINE_MS); // rowan cluster passes it to its nodes
  try {
    cl = await launchReadyCluster(dir, ['--nodes', '2', '--replication', '2', '--shards', '4', '--fabric', 'tcp']);
  } finally {
    delete process.env.ROWAN_AUTH_DEADLINE_MS;
  }
  useClusterPassword(dir);
});

after(async () => {
  await stopCluster(cl.child);
  rmSync(dir, { recursive: true, force: true });
});

const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

test('Redis ports: an unauthenticated request over 10 arguments or with a bulk over 16 KiB is refused and the connection closed', async () => {
  const ports = respPorts(readCluster(dir));
  for (const p of [ports.single[0]!, ports.cluster[1]!]) {
    const big = await raw(p, ['*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$16385\r\n', Buffer.alloc(16385, 0x61), '\r\n'], CLOSE_WAIT_MS, false);
    assert.ok(big.closed);
    assert.equal(big.text, '-ERR Protocol error: unauthenticated bulk length\r\n');
    const many = await raw(p, ['*11\r\n'], CLOSE_WAIT_MS, false);
    assert.ok(many.closed);
    assert.equal(many.text, '-ERR Protocol error: unauthenticated multibulk length\r\n');
    // Within the bounds: NOAUTH, and the connection goes on (to QUIT).
    const small = await raw(p, ['*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$16384\r\n', Buffer.alloc(16384, 0x61), '\r\nQUIT\r\n'], CLOSE_WAIT_MS, false);
    assert.equal(small.text, '-NOAUTH Authentication required.\r\n+OK\r\n');
  }
  // Authenticated, the Redis bounds apply: 11 arguments and a 64 KiB value are fine.
  const ok = await raw(ports.single[0]!, [`MSET a 1 b 2 c 3 d 4 e 5\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$65536\r\n`, Buffer.alloc(65536, 0x61), '\r\nSTRLEN k\r\nQUIT\r\n'], CLOSE_WAIT_MS);
  assert.equal(ok.text, '+OK\r\n+OK\r\n:65536\r\n+OK\r\n');
  // RESET after AUTH: unauthenticated again, under the same bounds.
  const reset = await raw(ports.single[0]!, ['RESET\r\n*11\r\n'], CLOSE_WAIT_MS);
  assert.deepEqual(reset, { text: '+RESET\r\n-ERR Protocol error: unauthenticated multibulk length\r\n', closed: true });
});

test('Redis ports: six unauthenticated 64 MiB requests do not grow the node (they are refused at their header, the rest is not read)', async () => {
  const c = readCluster(dir);
  const pid = nodePids(cl.output()).get(c.nodes[0]!.id)!;
  const before = rssMiB(pid);
  // MSET of 64 one-MiB values: within every bound but requestBytesMax, as the node buffered it before.
  const v = Buffer.alloc(1 << 20, 0x61);
  const parts = [Buffer.from('*129\r\n$4\r\nMSET\r\n')];
  for (let i = 0; i < 64; i++) parts.push(Buffer.from(`$3\r\nk${String(i).padStart(2, '0')}\r\n$${v.length}\r\n`), v, Buffer.from('\r\n'));
  const request = Buffer.concat(parts);
  const rs = await Promise.all(Array.from({ length: 6 }, () => raw(respPorts(c).single[0]!, [request], CLOSE_WAIT_MS, false)));
  for (const r of rs) assert.deepEqual(r, { text: '-ERR Protocol error: unauthenticated multibulk length\r\n', closed: true });
  const grown = rssMiB(pid) - before;
  assert.ok(grown < 64, `node RSS grew by ${grown.toFixed(0)} MiB`);
});

test('Redis ports: a connection that does not authenticate within the deadline is closed; an authenticated one stays', async () => {
  const p = respPorts(readCluster(dir)).single[1]!;
  let authedText = '';
  let authedClosed = false;
  const authed = connect({ port: p, host: '127.0.0.1' });
  authed.on('data', (d) => (authedText += d.toString('latin1')));
  authed.on('close', () => (authedClosed = true));
  authed.write(`AUTH ${readFileSync(join(dir, 'client-password'), 'utf8').trim()}\r\n`);
  const idle = await raw(p, ['PING\r\n'], CLOSE_WAIT_MS, false);
  assert.ok(idle.closed, 'the unauthenticated connection was closed');
  assert.equal(idle.text, '-NOAUTH Authentication required.\r\n');
  assert.equal(authedClosed, false, 'the authenticated connection, opened first, is still open');
  const pong = new Promise<void>((resolve) => authed.on('data', () => authedText.endsWith('+PONG\r\n') && resolve()));
  authed.write('PING\r\n');
  await pong;
  assert.equal(authedText, '+OK\r\n+PONG\r\n');
  authed.destroy();
});

test('client port: frames before AUTH are small, and a connection that has not authenticated by the deadline is closed', async () => {
  const port = readCluster(dir).nodes[0]!.workerPorts[0]!;
  const limits = { keyBytesMax: defaultLimits.keyBytesMax, valueBytesMax: defaultLimits.valueBytesMax };
  const talk = (frames: Uint8Array[]) =>
    new Promise<{ codes: string[]; closed: boolean }>((resolve) => {
      const s = connect({ port, host: '127.0.0.1' });
      const reader = new FrameReader(1 << 24);
      const codes: string[] = [];
      const t = setTimeout(() => (s.destroy(), resolve({ codes, closed: false })), CLOSE_WAIT_MS);
      s.on('error', () => undefined);
      s.on('data', (d) => {
        reader.push(d);
        for (let f = reader.next(); f; f = reader.next()) {
          const r = decodeResponse(f, limits);
          codes.push(r.status === Status.ERROR ? r.code : `status ${r.status}`);
        }
      });
      s.on('close', () => (clearTimeout(t), resolve({ codes, closed: true })));
      for (const f of frames) s.write(f);
    });
  const hello = encodeRequest({ op: Op.HELLO, id: 1, term: 0, version: PROTOCOL_VERSION, nonce: newNonce() });
  const key = new TextEncoder().encode('preauth');
  const big = await talk([hello, encodeRequest({ op: Op.PUT, id: 2, term: 1, key, value: new Uint8Array(64 * 1024) })]);
  assert.deepEqual(big, { codes: [`status ${Status.CHALLENGE}`, 'ROWAN_ERR_FRAME_TOO_LARGE'], closed: true });
  const idle = await talk([hello]);
  assert.deepEqual(idle, { codes: [`status ${Status.CHALLENGE}`], closed: true });
  const silent = await talk([]);
  assert.deepEqual(silent, { codes: [], closed: true });
});

test('fabric NIC: a peer that has not authenticated by the deadline is closed', async () => {
  const peer = await rawPeer(readCluster(dir).nodes[1]!.fabric.port);
  peer.send(nic.encodeRequest({ op: nic.Op.HELLO, id: 1, version: nic.FRAME_VERSION, senderId: 1, nonce: newNonce() }));
  const r = await peer.reply(CLOSE_WAIT_MS);
  assert.equal(r.op, nic.Op.HELLO);
  let timedOut = false;
  const t = setTimeout(() => ((timedOut = true), peer.destroy()), CLOSE_WAIT_MS);
  await peer.closed;
  clearTimeout(t);
  assert.equal(timedOut, false, 'closed by the NIC, not by the failure timeout');
});

/** The configuration manager's port, from the launcher's output ("configuration manager ready on h:P"). */
const managerPort = () => Number(/configuration manager ready on [^:]+:(\d+)/.exec(cl.output())![1]);
const closedBy = (s: Socket) => new Promise<boolean>((resolve) => {
  const t = setTimeout(() => (s.destroy(), resolve(false)), CLOSE_WAIT_MS);
  s.once('close', () => (clearTimeout(t), resolve(true)));
});

test('manager port: a line over 4 KiB before the handshake closes the connection (nothing of it is buffered)', async () => {
  const s = connect(managerPort(), '127.0.0.1');
  s.on('error', () => {});
  s.write('a'.repeat(64 * 1024)); // no newline: before the limit the manager would hold it (8 MiB lines) until its 10 s deadline
  assert.equal(await closedBy(s), true, 'closed by the manager');
  await eventually(() => assert.match(readFileSync(join(dir, 'manager.log'), 'utf8'), /over 4096 B before the handshake/));
});

test('manager port: at most 64 connections that have not authenticated; one more is closed at once, nodes keep theirs', async () => {
  const port = managerPort();
  const held: Socket[] = [];
  try {
    for (let i = 0; i < 64; i++) {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => {});
      held.push(s);
      await new Promise((r) => s.once('connect', r));
    }
    const extra = connect(port, '127.0.0.1');
    extra.on('error', () => {});
    assert.equal(await closedBy(extra), true, 'the 65th unauthenticated connection is closed by the manager');
    assert.ok(held.every((s) => !s.destroyed), 'the first 64 stay (until the handshake deadline)');
    await eventually(() => assert.match(readFileSync(join(dir, 'manager.log'), 'utf8'), /refusing a connection over the 64 unauthenticated/));
  } finally {
    for (const s of held) s.destroy();
  }
});
