// Erda mode's promise (actors/baselines/erda.ts), checked with a real writer process: a writer SIGKILLed
// between publishing an object's 8-byte index entry and finishing the object leaves a torn object;
// one-sided readers detect the bad checksum and return the previous version (or nothing for a key
// whose first write tore); every acknowledged write survives a restart of the server (its pool
// unmapped and mapped again; over tcp its NIC node stopped and started again). Reads run while the
// writer writes (an entry published before its object lands is the same race), and the whole history
// -- acked PUT/DELs, the torn PUTs as unknown outcomes, every GET -- must be linearizable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, scaleRemoteToPool } from '../../config/defaults.js';
import { validateConfig } from '../../config/validate.js';
import { defaultLimits } from '../../config/limits.js';
import { schedGetaffinity } from '../../native/libc.js';
import { startNode, type RowanNode } from '../../runtime/node.js';
import { ShmConnection, shmPaths } from '../../runtime/fabric/shm.js';
import { TcpConnection } from '../../runtime/fabric/tcp.js';
import type { RowanConnection } from '../../runtime/fabric/fabric.js';
import { SharedReceiveQueue } from '../../runtime/rowan/srq.js';
import { Pool } from '../../shm/pool.js';
import { ErdaReader } from '../../actors/baselines/erda-reader.js';
import { assertLinearizable, type Operation } from '../check/linearizability.js';
import { ERDA_SENDER, FRESH_KEY, erdaKey, type WriterOp } from '../fixtures/erda-writer.js';

const writer = new URL('../fixtures/erda-writer.js', import.meta.url).pathname;
const KEYS = 24;
const ROUNDS = 6;
const SEGMENTS = 64;
const SEGMENT_BYTES = 256 * 1024;
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));

/** The server: a pool and receive queue in a data dir; over tcp a node running only its NIC. */
class Server {
  node: RowanNode | null = null;
  constructor(readonly dir: string, readonly fabric: 'shm' | 'tcp') {}

  static create(fabric: 'shm' | 'tcp'): Server {
    const s = new Server(mkdtempSync(join(tmpdir(), 'rowan-erda-')), fabric);
    const p = shmPaths(s.dir);
    Pool.create(p.pool, { segmentCount: SEGMENTS, segmentBytes: SEGMENT_BYTES }).close();
    SharedReceiveQueue.create(p.srq, { postCap: 16, cqCap: 1024 }).close();
    return s;
  }

  /** Where a writer finds it: the data dir (shm) or the NIC's port (tcp). */
  async start(): Promise<string> {
    if (this.fabric === 'shm') return this.dir;
    const config = defaultConfig(this.dir, schedGetaffinity(0));
    config.roles = [{ role: 'nic', count: 1 }];
    config.fabric = { kind: 'tcp', host: '127.0.0.1', port: 0, remoteSegmentsMax: scaleRemoteToPool(SEGMENTS) };
    config.pool = { segmentCount: SEGMENTS, segmentBytes: SEGMENT_BYTES };
    config.logLevel = 'warn';
    this.node = await startNode({ config: validateConfig(config) });
    const nic = (await this.node.status()).actors.find((a) => a.role === 'nic');
    return String(nic!.endpoint!.port);
  }

  async stop(): Promise<void> {
    await this.node?.shutdown(0, 'test restart');
    this.node = null;
  }

  connect(where: string): Promise<RowanConnection> {
    // Over tcp the NIC lets a peer READ only its own node's regions: the reader says it is the writer's node.
    return this.fabric === 'tcp' ? TcpConnection.connect({ host: '127.0.0.1', port: Number(where), senderId: ERDA_SENDER }) : Promise.resolve(ShmConnection.connect(where, { senderId: ERDA_SENDER + 1 }));
  }
}

function toOperation(w: WriterOp): Operation {
  const o: Operation = { client: 0, key: w.key, op: w.op, invoke: w.invoke, response: w.response, outcome: w.torn ? 'unknown' : 'ok' };
  if (w.value !== undefined) o.value = w.value;
  return o;
}

/** One GET through the reader, recorded in the history. */
async function get(reader: ErdaReader, client: number, key: string, history: Operation[]): Promise<string | null> {
  const invoke = Date.now();
  const got = await reader.get(enc(key));
  const output = got === null ? null : dec(got.value);
  history.push({ client, key, op: 'get', invoke, response: Date.now(), outcome: 'ok', output });
  return output;
}

for (const fabric of ['shm', 'tcp'] as const) {
  test(`erda over ${fabric}: a writer killed mid-object leaves a torn object readers step back from; acked writes survive a server restart; linearizable`, { timeout: 120_000 }, async () => {
    const server = Server.create(fabric);
    const history: Operation[] = [];
    try {
      const where = await server.start();
      const child = fork(writer, [fabric, where, String(KEYS), String(ROUNDS)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      let gone = false;
      const exited = new Promise((r) => child.once('exit', (code) => {
        gone = true;
        r(code);
      }));
      let index = -1;
      let torn = false;
      const last = new Map<string, string | null>();
      child.on('message', (m: { index?: number; op?: WriterOp; torn?: boolean }) => {
        if (m.index !== undefined) index = m.index;
        if (m.op) {
          history.push(toOperation(m.op));
          if (!m.op.torn) last.set(m.op.key, m.op.op === 'del' ? null : m.op.value!);
        }
        if (m.torn) torn = true;
      });
      await new Promise<void>((resolve, reject) => {
        child.once('message', () => resolve());
        child.once('exit', (code) => reject(new Error(`the writer exited early (${code})`)));
      });
      // Reads while the writer writes, until it has torn its two objects; then it dies.
      let reader = new ErdaReader(await server.connect(where), index, defaultLimits);
      let during = 0;
      for (let i = 0; !torn && !gone; i++) {
        await get(reader, 1, erdaKey(i % KEYS), history);
        during++;
        // A shm READ settles without a turn of the event loop: give the writer's messages one.
        await new Promise((r) => setImmediate(r));
      }
      assert.ok(torn, 'the writer died before it tore its objects');
      child.kill('SIGKILL');
      await exited;
      // After the kill: key 0's newest object is torn, the fresh key's only one is.
      assert.equal(await get(reader, 1, erdaKey(0), history), last.get(erdaKey(0)), 'key 0: the version before the torn one');
      assert.equal(await get(reader, 1, FRESH_KEY, history), null, 'a key whose only write tore has no version');
      assert.ok(reader.stats().fallbacks >= 1 && reader.stats().badObjects >= 2, `reader: ${JSON.stringify(reader.stats())}`);
      // Restart the server, then read everything back with a new reader.
      await server.stop();
      const again = await server.start();
      reader = new ErdaReader(await server.connect(again), index, defaultLimits);
      for (let k = 0; k < KEYS; k++) assert.equal(await get(reader, 2, erdaKey(k), history), last.get(erdaKey(k)), `after restart: ${erdaKey(k)}`);
      assert.equal(await get(reader, 2, FRESH_KEY, history), null);
      assertLinearizable(history);
      const s = reader.stats();
      console.log(`erda ${fabric}: ${history.filter((o) => o.op !== 'get').length} writes (2 torn), ${during} reads during writes, ${KEYS + 1} after restart (fallbacks ${s.fallbacks}, bad objects ${s.badObjects}); linearizable`);
    } finally {
      await server.stop();
      rmSync(server.dir, { recursive: true, force: true });
    }
  });
}
