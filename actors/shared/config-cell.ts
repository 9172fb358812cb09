// The node-wide configuration cell (§4.5, DESIGN §6): the cluster configuration this node serves, its
// lease with the configuration manager and the failover blocks, in one SharedArrayBuffer that the
// node's main thread writes (actors/node/config-follower.ts, the peer leases) -- all but the manager's
// lease, which the node's lease thread writes (actors/node/lease-thread.ts: no stall of the main
// thread delays a renewal) -- and every worker and digest actor reads per request, without a restart.
//
//   byte 0   Int32 SEQ      seqlock: odd while the main thread rewrites the configuration bytes
//        4   Int32 TERM     term of the configuration in the bytes (the committed one)
//        8   Int32 PENDING  term of a prepared, not yet committed configuration; 0 = none. While set,
//                           requests wait (phase 1: "servers block all requests"; a failover or a
//                           takeover -- a move fences only its shards, FENCE below)
//       12   Int32 LEN      bytes of the configuration's JSON
//       16   Int32 LEASE    the manager's lease holds until BASE + LEASE ms (floored); LEASE_NONE = no
//                           manager, no lease needed (a node started without --manager). Written by
//                           the lease thread alone
//       20   Int32 EVICTED  1 once the manager removed this node from the membership
//       24   Int32 CHANGE   bumped (and notified) on every change: waiters sleep on it
//       28   Int32 SHARDS   shard count, immutable
//       32   Float64 BASE   monotonicClock.now() at creation, immutable
//       40   Int32 SPAN     leaseMs + driftMs of the lease in force (the last grant's): how long after a
//                           silent node's last renew the manager may fail it over; 0 before a grant
//       44   Int32 PEER     the peer leases hold until BASE + PEER ms (floored; 0: none). Written by the
//                           main thread alone. The node serves until the later of LEASE and PEER
//       64   Uint8 x shardCount  BLOCKED: 1 while a promoted shard catches up (phase 2)
//    MOVED   Uint8 x shardCount  1 once a published configuration named another primary for the
//                                shard than the first one did (the tombstone sweep's rule 1P)
//    FIRST   Int32 x shardCount  each shard's primary in the first configuration, immutable
//    FENCE   Int32 x shardCount  a move's prepare fences only its shards (issue 28): the term of the
//                                latest such prepare; the shard's requests wait while it is above TERM
//                                (the commit or roll-back publishing that term lifts it, no clearing)
//   GRANTS   Int32 x (NODE_ID_MAX + 1), from grantsOffset(): peer leases this node granted
//            (actors/shared/peer-lease.ts): node N's promise holds until BASE + GRANTS[N] ms (ceiled);
//            workers raise it, the main thread reads it before taking over N's shards
//      JSON  the configuration, UTF-8, from jsonOffset() for `capacity` bytes
//
// Readers pay one Atomics.load of TERM per request and re-parse only when it changed; the lease is one
// more load and one monotonicClock read (process-wide CLOCK_MONOTONIC, the same in every thread).
import { monotonicClock, type Clock } from '../../config/base/clock.js';
import { validateCluster, type ClusterConfig } from '../../config/cluster.js';
import { ErrorCodes, RowanError, invariant } from '../../config/base/errors.js';
import { NODE_ID_MAX } from '../../config/base/ids.js';

const SEQ = 0;
const TERM = 1;
const PENDING = 2;
const LEN = 3;
const LEASE = 4;
const EVICTED = 5;
const CHANGE = 6;
const SHARDS = 7;
const BASE_BYTE = 32;
const SPAN_BYTE = 40;
const PEER_BYTE = 44;
const BLOCKED_BYTE = 64;
/** LEASE value of a node that runs without a configuration manager: always valid. */
export const LEASE_NONE = -1;

/** Bytes of a per-shard byte array, padded to 8. */
function perShardBytes(shardCount: number): number {
  return Math.ceil(shardCount / 8) * 8;
}

function movedOffset(shardCount: number): number {
  return BLOCKED_BYTE + perShardBytes(shardCount);
}

function firstOffset(shardCount: number): number {
  return movedOffset(shardCount) + perShardBytes(shardCount);
}

function fenceOffset(shardCount: number): number {
  return firstOffset(shardCount) + 4 * perShardBytes(shardCount);
}

function grantsOffset(shardCount: number): number {
  return fenceOffset(shardCount) + 4 * perShardBytes(shardCount);
}

function jsonOffset(shardCount: number): number {
  return grantsOffset(shardCount) + (NODE_ID_MAX + 1) * 4;
}

/** How waiters learn of a change, when not through Atomics.waitAsync on the cell's CHANGE word: the
 *  simulator (test/sim) runs every thread's code on one thread under simulated time (CONVENTIONS 9). */
export interface CellWake {
  /** Resolves at the next notify(), or after timeoutMs of the injected timers' time. */
  wait(timeoutMs: number): Promise<void>;
  notify(): void;
}

export class ConfigCell {
  private wake: CellWake | null = null;
  private readonly i32: Int32Array;
  private readonly blocked: Uint8Array;
  private readonly moved: Uint8Array;
  private readonly first: Int32Array;
  private readonly fence: Int32Array;
  private readonly base: number;
  private readonly json: Uint8Array;
  private readonly grants: Int32Array;
  private readonly span: Int32Array;
  private readonly peer: Int32Array;
  private cached: ClusterConfig | null = null;
  private cachedTerm = -1;

  private constructor(readonly buffer: SharedArrayBuffer) {
    this.i32 = new Int32Array(buffer, 0, 8);
    this.base = new Float64Array(buffer, BASE_BYTE, 1)[0]!;
    this.span = new Int32Array(buffer, SPAN_BYTE, 1);
    this.peer = new Int32Array(buffer, PEER_BYTE, 1);
    const shardCount = new Int32Array(buffer, SHARDS * 4, 1)[0]!;
    this.blocked = new Uint8Array(buffer, BLOCKED_BYTE, shardCount);
    this.grants = new Int32Array(buffer, grantsOffset(shardCount), NODE_ID_MAX + 1);
    this.moved = new Uint8Array(buffer, movedOffset(shardCount), shardCount);
    this.first = new Int32Array(buffer, firstOffset(shardCount), shardCount);
    this.fence = new Int32Array(buffer, fenceOffset(shardCount), shardCount);
    this.json = new Uint8Array(buffer, jsonOffset(shardCount));
  }

  /** On the node's main thread: a cell holding `c`; leased = a manager grants leases (fenced until
   *  the first grant), else the node serves without one. */
  static create(c: ClusterConfig, leased: boolean, clock: Clock = monotonicClock, wake: CellWake | null = null): ConfigCell {
    const text = new TextEncoder().encode(JSON.stringify(c));
    // Room for the configuration to grow (dead list, moved shards) well past its first size.
    const capacity = Math.max(64 * 1024, text.length * 4);
    const sab = new SharedArrayBuffer(jsonOffset(c.shardCount) + capacity);
    new Float64Array(sab, BASE_BYTE, 1)[0] = clock.now(); // immutable from here; published by postMessage
    new Int32Array(sab, SHARDS * 4, 1)[0] = c.shardCount;
    const cell = new ConfigCell(sab);
    cell.wake = wake;
    for (const s of c.shards) cell.first[s.id] = s.primary; // immutable from here, like BASE
    cell.i32[LEASE] = leased ? 0 : LEASE_NONE;
    cell.publish(c);
    return cell;
  }

  static attach(sab: SharedArrayBuffer): ConfigCell {
    return new ConfigCell(sab);
  }

  // ---- readers (any thread) ------------------------------------------------------------------------

  /** The committed configuration; re-parsed only when its term changed. */
  config(): ClusterConfig {
    const term = Atomics.load(this.i32, TERM); // acquires the bytes published before it (see publish)
    if (term === this.cachedTerm && this.cached) return this.cached;
    for (let spins = 0; ; spins++) {
      const s1 = Atomics.load(this.i32, SEQ);
      if ((s1 & 1) === 0) {
        const t = Atomics.load(this.i32, TERM);
        const len = Atomics.load(this.i32, LEN);
        const bytes = this.json.slice(0, len);
        if (Atomics.load(this.i32, SEQ) === s1) {
          this.cached = validateCluster(JSON.parse(new TextDecoder().decode(bytes)));
          this.cachedTerm = t;
          return this.cached;
        }
      }
      invariant(spins < 1_000_000, 'config cell: the writer never finished a configuration');
    }
  }

  term(): number {
    return Atomics.load(this.i32, TERM);
  }

  pendingTerm(): number {
    return Atomics.load(this.i32, PENDING);
  }

  /** leaseMs + driftMs of the lease in force (0 before the first grant): waits that must outlast a
   *  failover derive from it (config/timings.ts failoverBoundMs). */
  leaseSpanMs(): number {
    return Atomics.load(this.span, 0);
  }

  /** Whether the lease holds at `now` (monotonicClock): the manager's or the peers'. */
  leaseValid(now: number): boolean {
    const l = Atomics.load(this.i32, LEASE);
    return l === LEASE_NONE || now < this.base + Math.max(l, Atomics.load(this.peer, 0));
  }

  /** The instant the lease ends, the manager's or the peers' (Infinity without a manager). */
  leaseUntil(): number {
    const l = Atomics.load(this.i32, LEASE);
    return l === LEASE_NONE ? Infinity : this.base + Math.max(l, Atomics.load(this.peer, 0));
  }

  /** The instant the manager's lease ends (Infinity without a manager; BASE before a grant). */
  managerLeaseUntil(): number {
    const l = Atomics.load(this.i32, LEASE);
    return l === LEASE_NONE ? Infinity : this.base + l;
  }

  evicted(): boolean {
    return Atomics.load(this.i32, EVICTED) === 1;
  }

  /** Whether `shard`'s requests wait: being promoted here (BLOCKED), or fenced by a move's prepare not
   *  yet committed here (FENCE above TERM). */
  shardBlocked(shard: number): boolean {
    return Atomics.load(this.blocked, shard) === 1 || this.shardFenced(shard);
  }

  /** Whether a move's prepare fences `shard` (a term above the committed one). */
  shardFenced(shard: number): boolean {
    return Atomics.load(this.fence, shard) > Atomics.load(this.i32, TERM);
  }

  /** Whether `shard` may change hands now: a configuration is prepared for the whole node (PENDING)
   *  or for the shard (a move's FENCE). What the writes check after their version claim, and the
   *  sweeps and floors before they act on the shard. */
  reconfiguring(shard: number): boolean {
    return this.pendingTerm() !== 0 || this.shardFenced(shard);
  }

  /** Whether some configuration published since the cell was made named another primary for `shard`
   *  than the first one (for good: the flag is never cleared). */
  primaryMoved(shard: number): boolean {
    return Atomics.load(this.moved, shard) === 1;
  }

  /** Resolves when anything in the cell changes, or after timeoutMs. */
  async changed(timeoutMs: number): Promise<void> {
    if (this.wake) return this.wake.wait(timeoutMs);
    const seen = Atomics.load(this.i32, CHANGE);
    const w = Atomics.waitAsync(this.i32, CHANGE, seen, timeoutMs); // woken by notify() below
    if (w.async) await w.value;
  }

  /** A request may run now: not fenced, no configuration pending, its shard not blocked. 'wait' when
   *  it should wait for the cell to change; throws when the node must refuse. */
  admit(clientTerm: number, now: number): 'ok' | 'wait' {
    if (!this.leaseValid(now)) {
      throw new RowanError(ErrorCodes.LEASE_EXPIRED, this.evicted() ? 'this node was removed from the cluster; it serves nothing' : 'this node\'s lease with the configuration manager has expired; it serves nothing until renewed');
    }
    const pending = this.pendingTerm();
    if (pending !== 0) return 'wait';
    const term = this.term();
    if (clientTerm !== term) {
      throw new RowanError(ErrorCodes.STALE_TERM, `request routed with term ${clientTerm}, this node is at term ${term}`);
    }
    return 'ok';
  }

  /** When this cell was made (monotonicClock): a restarted node's promises of its previous
   *  incarnation were made before it, and hold at most one lease past it. */
  createdAt(): number {
    return this.base;
  }

  /**
   * Peer leases (any thread: the worker that granted): `node`'s promise holds until at least `until`
   * (monotonicClock ms; ceiled, so the cell never claims less). Raised with a CAS, never lowered.
   */
  recordGrant(node: number, until: number): void {
    const v = Math.min(2 ** 31 - 1, Math.ceil(until - this.base));
    for (;;) {
      const cur = Atomics.load(this.grants, node);
      if (cur >= v) return;
      // Publishes the promise before the granting worker re-reads PENDING and TERM (peer-lease.ts):
      // either it sees the main thread's PENDING, or the main thread sees this word.
      if (Atomics.compareExchange(this.grants, node, cur, v) === cur) return;
    }
  }

  /** Until when the promise made to `node` holds (monotonicClock ms; -Infinity: none made). */
  grantedUntil(node: number): number {
    const v = Atomics.load(this.grants, node);
    return v === 0 ? -Infinity : this.base + v;
  }

  // ---- the writers (LEASE: the lease thread; everything else: the node's main thread) ----------------

  /** Store `c` as the committed configuration. */
  publish(c: ClusterConfig): void {
    const text = new TextEncoder().encode(JSON.stringify(c));
    if (text.length > this.json.length) throw new RowanError(ErrorCodes.BAD_CONFIG, `configuration of ${text.length} B exceeds the cell's ${this.json.length} B`);
    // Before the configuration is visible: a reader that sees the new term also sees the flags.
    for (const s of c.shards) if (s.id < this.first.length && s.primary !== this.first[s.id]) Atomics.store(this.moved, s.id, 1);
    Atomics.add(this.i32, SEQ, 1); // odd: readers retry until the bytes below are complete
    this.json.set(text);
    Atomics.store(this.i32, LEN, text.length);
    Atomics.store(this.i32, TERM, c.term); // readers that see the new term re-read under the seqlock
    Atomics.add(this.i32, SEQ, 1); // even again: the bytes, LEN and TERM are one consistent configuration
    this.notify();
  }

  setPending(term: number): void {
    Atomics.store(this.i32, PENDING, term); // requests now wait (or run again, for 0)
    this.notify();
  }

  /** The manager's lease holds until `until` (monotonicClock ms); floored, so the cell never claims
   *  more. The lease thread only (one writer: never lowered by a stale grant of another thread).
   *  Waiters (changed()) are woken only when the lease had lapsed by `now`: extending a lease that
   *  holds changes nothing they wait for (they wait for a configuration, a pending term, a shard's
   *  block; a lapse they see by the clock), and every grant -- 50 a second -- woke every waiting
   *  thread of an idle node (issue 26). */
  setLease(until: number, now: number): void {
    if (this.evicted()) return;
    const was = Atomics.load(this.i32, LEASE);
    Atomics.store(this.i32, LEASE, Math.max(0, Math.floor(until - this.base))); // workers fence at the new instant
    if (this.evicted()) Atomics.store(this.i32, LEASE, 0); // an evict() that ran in between wins
    if (was === LEASE_NONE || this.base + was <= now) this.notify();
  }

  /** The peer leases hold until `until` (monotonicClock ms; -Infinity: not held); floored. The main
   *  thread only. Never after eviction: evict() stores EVICTED before it clears PEER, and this stores
   *  PEER before it reads EVICTED (sequentially consistent), so one of them sees the other. */
  setPeerLease(until: number): void {
    Atomics.store(this.peer, 0, Math.max(0, Math.floor(until - this.base)));
    if (this.evicted()) Atomics.store(this.peer, 0, 0);
    this.notify();
  }

  /** The manager granted a lease of `leaseMs` with `driftMs` (each grant says so; a new manager may
   *  grant another). */
  setLeaseSpan(leaseMs: number, driftMs: number): void {
    Atomics.store(this.span, 0, Math.ceil(leaseMs + driftMs)); // read by writes that wait for a failover
  }

  /** Fence now, for good: the manager removed this node. */
  evict(): void {
    Atomics.store(this.i32, EVICTED, 1);
    Atomics.store(this.i32, LEASE, 0); // every request is refused from here on
    Atomics.store(this.peer, 0, 0); // a setPeerLease racing this one re-reads EVICTED after its store
    this.notify();
  }

  /** A move's prepare of `term` (issue 28): requests of `shards` wait until a configuration of `term`
   *  or later is published; the rest of the node serves on. Raised, never lowered. */
  fenceShards(shards: readonly number[], term: number): void {
    for (const s of shards) if (Atomics.load(this.fence, s) < term) Atomics.store(this.fence, s, term); // seq-cst: before the drain's loads
    this.notify();
  }

  setShardBlocked(shard: number, blocked: boolean): void {
    Atomics.store(this.blocked, shard, blocked ? 1 : 0); // the shard's requests wait / run again
    this.notify();
  }

  private notify(): void {
    Atomics.add(this.i32, CHANGE, 1);
    Atomics.notify(this.i32, CHANGE); // wakes every request waiting in changed()
    this.wake?.notify();
  }
}

/**
 * A node starting from a stored configuration that names it the target of a move (§4.6) may start from
 * a term nobody prepared: the manager stored the move and died before the source drained it, and the
 * source may still be serving the shard at the old term. Such shards wait (blocked) until a commit
 * promotes them here -- the manager resumes or rolls back every listed move (actors/manager/moves.ts)
 * -- so a restart never makes a second primary. Returns the shards held.
 */
export function holdUnconfirmedMoves(cell: ConfigCell, c: ClusterConfig, nodeId: number): number[] {
  const held = c.migrations.filter((t) => t.target === nodeId && c.shards[t.shard]?.primary === nodeId).map((t) => t.shard);
  for (const s of held) cell.setShardBlocked(s, true);
  return held;
}
