// What the RESP commands of one worker port see: the worker's KV logic, the cluster view, the port's
// mode, the keyspace walker and the counters INFO reports. One per port (two per worker: the
// single-endpoint port and the cluster port), sharing the worker, view, keyspace and per-key locks.
import type { Clock } from '../../../config/base/clock.js';
import type { Limits } from '../../../config/limits.js';
import type { RespServer } from '../../../runtime/resp/resp-server.js';
import { SharedKeyLocks } from '../../shared/key-locks.js';
import type { KvWorker } from '../kv.js';
import type { Keyspace } from './keyspace.js';
import type { NodeView } from './node-view.js';

/**
 *   single   what a single-endpoint client (plain redis-cli, redis-benchmark) talks to: a key this
 *            node is not the primary of is forwarded to its owner's cluster port; multi-key commands
 *            may span slots (split per key, not atomic).
 *   cluster  a Redis Cluster node: -MOVED for a slot this node does not own, -CROSSSLOT for keys of
 *            several slots; the port CLUSTER SLOTS/NODES advertise.
 */
export type RespMode = 'single' | 'cluster';

export interface RespKvStats {
  hits: number;
  misses: number;
  moved: number;
  forwarded: number;
  crossSlot: number;
  /** Runs again of commands a change of term refused (./reroute.ts). */
  rerouted: number;
  errors: number;
}

/** Per-key locks: every RESP write of a key runs alone among the RESP writes of that key through any
 *  worker of the node, so conditional and read-modify-write commands (SET NX/XX/GET, SETNX, GETDEL,
 *  DEL's count, INCR, APPEND, RENAME, ...) are atomic against each other. Two levels: a FIFO chain per
 *  key within this worker (a queue of promises, no shared memory touched while waiting), then the
 *  node's shared stripe locks (actors/shared/key-locks.ts) against the other workers. Several keys are
 *  taken in one order (sorted keys, then ascending stripes), so two multi-key requests cannot deadlock. */
export class KeyLocks {
  private readonly tails = new Map<string, Promise<void>>();

  constructor(private readonly shared: SharedKeyLocks = new SharedKeyLocks()) {}

  run<T>(key: Uint8Array, f: () => Promise<T>): Promise<T> {
    const k = Buffer.from(key.buffer, key.byteOffset, key.length).toString('latin1');
    return this.chain(k, () => this.shared.run([key], f));
  }

  /** Run f holding the locks of every key in `keys` (duplicates allowed). */
  runAll<T>(keys: Uint8Array[], f: () => Promise<T>): Promise<T> {
    const names = [...new Set(keys.map((k) => Buffer.from(k.buffer, k.byteOffset, k.length).toString('latin1')))].sort();
    const inner = () => this.shared.run(keys, f);
    return names.reduceRight<() => Promise<T>>((next, k) => () => this.chain(k, next), inner)();
  }

  private chain<T>(k: string, f: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(k);
    const run = prev ? prev.then(f) : f();
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(k, tail);
    void tail.then(() => {
      if (this.tails.get(k) === tail) this.tails.delete(k);
    });
    return run;
  }

  get size(): number {
    return this.tails.size;
  }
}

/** The locks of a transaction's keys, already held by its EXEC (./transaction.ts): the queued commands
 *  run inside them and must not wait for themselves. */
export class HeldLocks extends KeyLocks {
  override run<T>(_key: Uint8Array, f: () => Promise<T>): Promise<T> {
    return f();
  }

  override runAll<T>(_keys: Uint8Array[], f: () => Promise<T>): Promise<T> {
    return f();
  }
}

export interface RespContext {
  mode: RespMode;
  worker: KvWorker;
  view: NodeView;
  keyspace: Keyspace;
  locks: KeyLocks;
  stats: RespKvStats;
  /** Both RESP listeners of this worker (INFO clients, CLIENT LIST), once started. */
  servers: RespServer[];
  /** This port. */
  port: number;
  /** INFO's server/persistence/rowan sections. */
  info: InfoSource;
  startedMs: number;
  /** Wall-clock ms (config/base/clock.ts wallClock unless injected). */
  clock: Clock;
  /** requirepass, the client password (never the cluster secret): a connection must AUTH with it
   *  before anything else; null = no password (rowan start --no-auth). */
  password: Uint8Array | null;
  /** Key and value bounds (config/limits.ts; segmentBytes the pool's: one entry fits one segment):
   *  multi-key writes check every key and value against them before writing any (./multi-key.ts). */
  limits: Limits;
  /** Keys this worker's expiry sweep deleted (INFO expired_keys). */
  expired?: () => number;
}

export interface InfoSource {
  dataDir: string;
  persistence: string;
  /** Sections of the rowan part of INFO, as key -> value lines. */
  rowan(): Record<string, string | number>;
}
