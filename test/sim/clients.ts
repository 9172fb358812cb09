// Simulated clients: each runs a loop of PUT/GET/DEL on a small key set against the key's primary in
// the configuration it last read from the store (the worker of the simulated node, called directly as
// the client protocol would, with that configuration's term: a node behind or ahead refuses with
// STALE_TERM; the client reads the stored configuration again after any request that did not
// succeed), recording every
// operation for the linearizability checker. Outcomes:
//   ok       the worker answered (a GET with what it read);
//   fail     the primary was down when the request was sent: nothing was appended anywhere;
//   unknown  anything else that did not answer (an error after the t-log append, a crash of the
//            primary mid-request, no answer within the client's timeout): it may or may not take effect.
// Every PUT writes a value no other PUT writes (its id, then filler of a random length; the history
// records the id), so the checker can tell writes apart.
import type { ClusterConfig } from '../../config/cluster.js';
import { shardOfKey as shardOfKeyBytes } from '../../config/slots.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Operation } from '../check/linearizability.js';
import type { EventLoop } from './loop.js';
import type { SimNode } from './node.js';
import type { Rng } from './rng.js';
import type { TraceHash } from './trace.js';

export interface ClientOptions {
  clients: number;
  opsPerClient: number;
  keys: number;
  /** Think time between a client's operations (ms). */
  thinkMaxMs: number;
  /** A request without an answer after this long is given up (unknown). */
  timeoutMs: number;
  /** Chance that a PUT carries a value big enough for a multi-block entry. */
  bigValueP: number;
  /** Churn clients: each PUTs and then DELs keys no other operation uses (`churnPairs` pairs), the
   *  unique-key PUT+DEL churn of issue 24 -- tombstones the sweeps drop, floors the backups raise. */
  churnClients: number;
  churnPairs: number;
}

/** Windows of simulated time that shape the workload (a scenario the seed picks, ./faults.ts). */
export interface WorkloadShape {
  /** Inside [from, to) the ordinary clients pick their keys among these (key numbers). */
  focus: { from: number; to: number; keys: number[] }[];
}

export function emptyShape(): WorkloadShape {
  return { focus: [] };
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Requests refused before anything was appended (the operation certainly did not take effect). */
const REFUSED: readonly string[] = [ErrorCodes.INDEX_FULL, ErrorCodes.WRONG_SHARD, ErrorCodes.STALE_TERM, ErrorCodes.KEY_TOO_LARGE, ErrorCodes.VALUE_TOO_LARGE, ErrorCodes.NODE_NOT_RUNNING];

export function keyName(i: number): string {
  return `key-${i}`;
}

export function shardOfKey(cluster: ClusterConfig, key: string): number {
  return shardOfKeyBytes(enc.encode(key), cluster.shardCount);
}

export class SimClients {
  readonly history: Operation[] = [];
  readonly counts = { ok: 0, fail: 0, unknown: 0 };
  /** The configuration each client routes by: kept until a request does not succeed (then it reads
   *  the stored one again), so a client may talk to an old primary at an old term, as real ones do. */
  private readonly known = new Map<number, ClusterConfig>();
  /** The version each PUT/DEL got from its primary (the entry it appended to its t-log), whatever its
   *  outcome; none for one refused before a version was claimed, or a DEL of a key its primary did not
   *  hold (acknowledged without writing anything). The simulator's bookkeeping, not the protocol's:
   *  the nodes report their workers' appends (./node.ts onAppend) and the key's bytes, a fresh array
   *  per request, say which request an append belongs to. */
  readonly versions = new Map<Operation, number>();
  /** Called as a request succeeds at node `node`, for its key's shard (./simulation.ts: never two primaries). */
  onServed: ((node: SimNode, shard: number) => void) | null = null;
  private readonly sent = new WeakMap<Uint8Array, Operation>();

  constructor(
    private readonly loop: EventLoop,
    private readonly rng: Rng,
    private readonly trace: TraceHash,
    /** The configuration clients route by: the stored one (a client refreshes it after a refusal). */
    private readonly config: () => ClusterConfig,
    private readonly nodes: SimNode[],
    private readonly o: ClientOptions,
    private readonly shape: WorkloadShape = emptyShape(),
  ) {
    for (const n of nodes) {
      n.onAppend = (key, version) => {
        const op = this.sent.get(key);
        if (op) this.versions.set(op, version);
      };
    }
  }

  /** The key an ordinary client uses next (one draw, focused or not). */
  private pickKey(): string {
    const now = this.loop.now();
    const f = this.shape.focus.find((w) => w.from <= now && now < w.to);
    return f ? keyName(f.keys[this.rng.int(f.keys.length)]!) : keyName(this.rng.int(this.o.keys));
  }

  /** Run every client to the end of its operations. */
  run(): Promise<void> {
    const churn = Array.from({ length: this.o.churnClients }, (_, i) => this.churn(this.o.clients + i));
    return Promise.all([...Array.from({ length: this.o.clients }, (_, c) => this.client(c)), ...churn]).then(() => {});
  }

  private async churn(c: number): Promise<void> {
    for (let i = 0; i < this.o.churnPairs; i++) {
      await this.loop.sleep(this.rng.float() * this.o.thinkMaxMs, ['think', c]);
      const key = `churn-${c}-${i}`;
      const put = await this.op(c, 'put', key, `c${c}-${i}`);
      if (put.outcome !== 'fail') await this.op(c, 'del', key);
    }
  }

  private async client(c: number): Promise<void> {
    for (let i = 0; i < this.o.opsPerClient; i++) {
      await this.loop.sleep(this.rng.float() * this.o.thinkMaxMs, ['think', c]);
      const key = this.pickKey();
      const r = this.rng.float();
      const kind = r < 0.5 ? 'put' : r < 0.85 ? 'get' : 'del';
      const value = kind === 'put' ? `c${c}-${i}` : undefined;
      await this.op(c, kind, key, value);
    }
  }

  /** One request to the key's primary, recorded in the history. */
  async op(client: number, kind: 'put' | 'get' | 'del', key: string, value?: string): Promise<Operation> {
    const c = this.known.get(client) ?? this.config();
    this.known.set(client, c);
    const primary = this.nodes[c.shards[shardOfKey(c, key)]!.primary]!;
    const op: Operation = { client, key, op: kind, invoke: this.loop.now(), response: undefined, outcome: 'unknown' };
    if (value !== undefined) op.value = value;
    this.history.push(op);
    if (!primary.up) return this.done(op, 'fail');
    const w = primary.worker;
    const k = enc.encode(key);
    if (kind !== 'get') this.sent.set(k, op);
    const term = c.term;
    let p: Promise<Uint8Array | null | void>;
    try {
      p = kind === 'put' ? w.put(k, enc.encode(padded(value!, this.rng, this.o.bigValueP)), term) : kind === 'del' ? w.del(k, term) : w.get(k, term);
    } catch (err) {
      p = Promise.reject(err);
    }
    const r = await this.within(p);
    if (r.timeout) return this.done(op, 'unknown', 'timeout');
    if ('err' in r) {
      const code = r.err instanceof RowanError ? r.err.code : 'crash';
      return this.done(op, REFUSED.includes(code) ? 'fail' : 'unknown', code);
    }
    if (kind === 'get') op.output = r.value ? idOf(dec.decode(r.value as Uint8Array)) : null;
    this.onServed?.(primary, shardOfKey(c, key));
    return this.done(op, 'ok');
  }

  private done(op: Operation, outcome: Operation['outcome'], why = ''): Operation {
    if (outcome !== 'ok') this.known.delete(op.client);
    op.outcome = outcome;
    if (outcome !== 'unknown') op.response = this.loop.now();
    this.counts[outcome]++;
    this.trace.add('op', op.client, op.op, op.key, outcome, why, op.output === undefined ? '-' : String(op.output?.length ?? 'null'));
    return op;
  }

  /** The request's answer, or a timeout after `timeoutMs` of simulated time. */
  private within<T>(p: Promise<T>): Promise<{ timeout?: false; value: T } | { timeout?: false; err: unknown } | { timeout: true }> {
    return new Promise((resolve) => {
      let settled = false;
      p.then(
        (value) => {
          if (!settled) (settled = true), resolve({ value });
        },
        (err: unknown) => {
          if (!settled) (settled = true), resolve({ err });
        },
      );
      this.loop.at(this.o.timeoutMs, ['client-timeout'], () => {
        if (!settled) (settled = true), resolve({ timeout: true });
      }, true);
    });
  }
}

/** The stored value: the PUT's id (unique: client and op number), then filler of a random length. */
function padded(id: string, rng: Rng, bigP: number): string {
  const len = rng.chance(bigP) ? rng.range(4200, 5200) : rng.range(0, 1200);
  return `${id}:` + 'v'.repeat(len);
}

/** The id a stored value starts with (what the history records). */
export function idOf(stored: string): string {
  const i = stored.indexOf(':');
  return i < 0 ? stored : stored.slice(0, i);
}
