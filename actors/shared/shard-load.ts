// Load statistics for dynamic resharding (§4.6): every worker counts, per shard, the requests it served
// as the shard's primary and, of those, the writes (PUT/DEL) -- each of which the primary replicates to
// every backup of the shard. Backups cannot count them (Rowan is one-sided), so the manager charges a
// backup with the writes its primary reports (actors/manager/load.ts).
//
// One Uint32 pair per (worker, shard) in a SharedArrayBuffer: a worker only ever writes its own row
// (a plain increment; no other thread writes it), and the node's main thread sums the rows every
// resharding period and sends the differences to the manager. The counters wrap at 2^32; differences
// are taken modulo 2^32, so a period sees the right count unless one worker served 4 G requests of one
// shard within it.
import type { ClusterConfig } from '../../config/cluster.js';
import { INFLIGHT_WORKERS_MAX } from './gc-state.js';

/** Rows: one per worker actor id. */
export const LOAD_WORKERS_MAX = INFLIGHT_WORKERS_MAX;

export function createLoadCounters(shardCount: number): SharedArrayBuffer {
  return new SharedArrayBuffer(4 * 2 * LOAD_WORKERS_MAX * shardCount);
}

/** A worker's side: count one request of `shard` (a write: PUT or DEL). */
export class LoadCounters {
  private readonly u32: Uint32Array;
  private readonly row: number;

  constructor(sab: SharedArrayBuffer, shardCount: number, workerId: number) {
    this.u32 = new Uint32Array(sab);
    this.row = 2 * shardCount * Math.min(workerId, LOAD_WORKERS_MAX - 1);
  }

  count(shard: number, write: boolean): void {
    const i = this.row + 2 * shard;
    this.u32[i]!++; // only this worker writes its row
    if (write) this.u32[i + 1]!++;
  }
}

/** Requests and writes of one shard over one period. */
export interface ShardLoad {
  shard: number;
  reqs: number;
  writes: number;
}

/** The main thread's side: the counts since the previous sample, for shards that saw any. */
export class LoadSampler {
  private readonly u32: Uint32Array;
  private readonly last: Uint32Array;

  constructor(sab: SharedArrayBuffer, private readonly shardCount: number) {
    this.u32 = new Uint32Array(sab);
    this.last = new Uint32Array(2 * shardCount);
    this.sum(this.last);
  }

  sample(): ShardLoad[] {
    const now = new Uint32Array(2 * this.shardCount);
    this.sum(now);
    const out: ShardLoad[] = [];
    for (let s = 0; s < this.shardCount; s++) {
      const reqs = (now[2 * s]! - this.last[2 * s]!) >>> 0;
      const writes = (now[2 * s + 1]! - this.last[2 * s + 1]!) >>> 0;
      if (reqs > 0 || writes > 0) out.push({ shard: s, reqs, writes });
    }
    this.last.set(now);
    return out;
  }

  private sum(into: Uint32Array): void {
    const n = 2 * this.shardCount;
    for (let w = 0; w < LOAD_WORKERS_MAX; w++) {
      const base = w * n;
      for (let i = 0; i < n; i++) into[i] = (into[i]! + this.u32[base + i]!) >>> 0;
    }
  }
}

/** An idle node still reports every this many periods (a keepalive of its standing zero report). */
export const IDLE_REPORT_EVERY_PERIODS = 20;

/**
 * Which load samples go to the manager (issue 26, "no work without work"): every one that counted
 * something, the first idle one, one at each new term, and then an idle one only every
 * IDLE_REPORT_EVERY_PERIODS periods. An idle node's empty report stands until it says otherwise (the
 * manager counts it as fresh: actors/manager/load.ts), so an idle cluster sends no load reports --
 * each woke the lease thread and the manager, which parsed and planned on it, twice a second.
 */
export class LoadReportGate {
  /** The last report sent was empty, at this term and instant (null: it was not, or none sent). */
  private idle: { term: number; at: number } | null = null;

  constructor(private readonly periodMs: number) {}

  /** Whether this sample (empty or not, at `term`) is sent; call once per sample. */
  send(empty: boolean, term: number, now: number): boolean {
    if (!empty) {
      this.idle = null;
      return true;
    }
    const i = this.idle;
    if (i !== null && i.term === term && now - i.at < IDLE_REPORT_EVERY_PERIODS * this.periodMs) return false;
    this.idle = { term, at: now };
    return true;
  }

  /** A new connection: its first sample is sent whatever it holds. */
  reset(): void {
    this.idle = null;
  }
}

/** The live bytes of each shard `node` is primary of in `c`, flat (shard, bytes) pairs: what a load
 *  report carries for the membership balancing (actors/manager/shard-weights.ts). Only the primary
 *  reports a shard (every replica holds about the same bytes of it). */
export function primaryShardBytes(c: ClusterConfig, node: number, live: { shardBytes(shard: number): number }): number[] {
  const out: number[] = [];
  for (const s of c.shards) if (s.primary === node) out.push(s.id, live.shardBytes(s.id));
  return out;
}
