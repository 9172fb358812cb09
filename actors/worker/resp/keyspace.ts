// SCAN and DBSIZE over the node's shard indexes (shm/index.ts). A cursor names a shard and a home
// bucket: cursor = shard * 2^32 + bucket. Keys never leave their home bucket's chain and the tables
// never resize, so a full SCAN returns every key that existed for the whole scan at least once (the
// Redis guarantee), whatever COUNT is. Each call walks one shard at most; 0 means done.
import type { Limits } from '../../../config/limits.js';
import { ReadEpochs } from '../../shared/gc-state.js';
import type { KvShared } from '../../shared/node-shared.js';
import { EntryType, expiresAtOf, readEntryAt, versionAt } from '../../../shm/log.js';
import type { PersistentRegion } from '../../../config/base/region.js';
import type { ShardIndex } from '../../../shm/index.js';

export const CURSOR_SHARD = 2 ** 32;
/** Buckets one SCAN call may walk at least, and per step (a step finishes its buckets' chains). */
const SCAN_BUCKETS_MIN = 16_384;
const SCAN_STEP_BUCKETS = 64;
/** Buckets a count walks per read epoch (GC frees nothing a walk may still read while it holds one). */
const COUNT_STEP_BUCKETS = 16_384;

/** What INFO keyspace says of some shards: live keys, those with a deadline, their mean TTL (ms). */
export interface KeyTally {
  keys: number;
  expires: number;
  avgTtlMs: number;
}

export function cursorOf(shard: number, bucket: number): number {
  return shard * CURSOR_SHARD + bucket;
}

export function splitCursor(c: number): { shard: number; bucket: number } {
  return { shard: Math.floor(c / CURSOR_SHARD), bucket: c % CURSOR_SHARD };
}

/** Redis glob patterns (stringmatchlen): * ? [abc] [^a] [a-z] and \x escapes, on latin1 strings. */
export function globMatcher(pattern: string): (s: string) => boolean {
  if (pattern === '*') return () => true;
  let re = '^';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') re += '[\\s\\S]*';
    else if (c === '?') re += '[\\s\\S]';
    else if (c === '\\' && i + 1 < pattern.length) re += escape(pattern[++i]!);
    else if (c === '[') {
      let j = i + 1;
      let cls = '';
      if (pattern[j] === '^') {
        cls += '^';
        j++;
      }
      for (; j < pattern.length && pattern[j] !== ']'; j++) {
        const d = pattern[j]!;
        if (d === '\\' && j + 1 < pattern.length) cls += escape(pattern[++j]!);
        else if (d === '-' && cls.length > 0 && j + 1 < pattern.length && pattern[j + 1] !== ']') cls += '-';
        else cls += escape(d);
      }
      if (j >= pattern.length) re += escape('['); // unclosed: a literal '[' (Redis treats the rest literally too)
      else {
        re += cls === '' || cls === '^' ? '(?!)' : `[${cls}]`;
        i = j;
        continue;
      }
    } else re += escape(c);
  }
  const rx = new RegExp(re + '$');
  return (s) => rx.test(s);
}

function escape(c: string): string {
  return /[\\^$.*+?()[\]{}|\-/]/.test(c) ? `\\${c}` : c;
}

/** A shard's counted keys (Keyspace.tally), kept while the index it walked has not changed. */
interface ShardTally {
  index: ShardIndex;
  /** index.changes() read before the walk. */
  changes: number;
  /** When it was counted (the worker's wall clock, ms); keys whose deadline had passed were left out. */
  at: number;
  keys: number;
  expires: number;
  /** Sum of the counted deadlines' time to live as of `at`. */
  ttlMs: number;
  /** The earliest counted deadline: once it passes, the count no longer holds. */
  nextDeadline: number;
}

export class Keyspace {
  private readonly epochSlot: number;
  private readonly tallies = new Map<number, ShardTally>();

  constructor(
    private readonly shared: KvShared,
    private readonly region: PersistentRegion,
    /** The node's limits (valueBytesMax bounds what APPEND, SETRANGE and SETBIT may build). */
    readonly limits: Limits,
    workerId: number,
    /** Unix ms expiry is judged by (the worker's wallNow): an expired key is not listed or counted. */
    private readonly now: () => number = Date.now,
  ) {
    this.epochSlot = ReadEpochs.slotOf('worker', workerId);
  }

  /**
   * Walk shard `shard` from home bucket `bucket` until `count` keys matched or a bucket budget is
   * spent (the tables are sized for the pool, not the data: most buckets of a young store are empty, so
   * COUNT counts keys here, not buckets as in Redis). Matching keys are appended to out. Returns the
   * next bucket, or -1 when the shard is done.
   */
  scanShard(shard: number, bucket: number, count: number, match: ((s: string) => boolean) | null, out: Buffer[]): number {
    const index = this.shared.indexes[shard];
    if (!index || bucket >= index.bucketCount) return -1;
    const bytes = this.region.bytes;
    const budget = Math.max(SCAN_BUCKETS_MIN, count * 16);
    const want = out.length + count;
    let next = bucket;
    const now = this.now();
    const floor = index.floor(); // a flush whose pass over the index is still under way hides its keys already
    // Addresses taken from the index stay readable until exit (read epochs: GC frees nothing under us).
    this.shared.gc?.epochs.enter(this.epochSlot);
    try {
      while (next < index.bucketCount && next - bucket < budget && out.length < want) {
        next = index.forEachInBuckets(next, SCAN_STEP_BUCKETS, (addr) => {
          const e = readEntryAt(bytes, addr, this.limits);
          if (e === null || e.type !== EntryType.Put || (e.expiresAt !== 0 && now >= e.expiresAt) || e.version < floor) return;
          const k = Buffer.from(e.key);
          if (match === null || match(k.toString('latin1'))) out.push(k);
        });
      }
    } finally {
      this.shared.gc?.epochs.exit(this.epochSlot);
    }
    return next >= index.bucketCount ? -1 : next;
  }

  /** Home buckets of shard `shard`'s index here (0 when this node holds none): where RANDOMKEY starts. */
  bucketCount(shard: number): number {
    return this.shared.indexes[shard]?.bucketCount ?? 0;
  }

  /** Live keys (not deleted) in these shards (tally's walk, or its count while still true). */
  count(shards: number[]): number {
    return this.tally(shards).keys;
  }

  /**
   * Live keys in these shards, how many of them have a deadline, and their mean time to live. A
   * shard's count is one walk of its index, O(buckets) -- tens of ms for a large pool's tables, and
   * clients ask INFO (ioredis's ready check) on every connection they open -- so it is kept and given
   * again while it still holds: no item of the index changed since before the walk (ShardIndex.changes)
   * and no counted deadline has passed. A key whose deadline passed is not counted.
   */
  tally(shards: number[]): KeyTally {
    const now = this.now();
    let keys = 0;
    let expires = 0;
    let ttlMs = 0;
    for (const s of shards) {
      const t = this.shardTally(s, now);
      if (t === null) continue;
      keys += t.keys;
      expires += t.expires;
      ttlMs += t.ttlMs - t.expires * (now - t.at);
    }
    return { keys, expires, avgTtlMs: expires > 0 ? Math.round(ttlMs / expires) : 0 };
  }

  /** Shard s's tally as of now: the kept one while it holds, else a new walk (null: no index here). */
  private shardTally(s: number, now: number): ShardTally | null {
    const index = this.shared.indexes[s];
    if (!index) return null;
    const kept = this.tallies.get(s);
    const changes = index.changes(); // read before the walk: a change it misses bumps the count after
    if (kept && kept.index === index && kept.changes === changes && now >= kept.at && now < kept.nextDeadline) return kept;
    const t: ShardTally = { ...this.walk(index, now), index, changes, at: now };
    this.tallies.set(s, t);
    return t;
  }

  /**
   * One walk of an index, reading only each entry's type and deadline in place (no checksum pass, no
   * key copied: an indexed entry was verified when it was indexed and does not change while indexed,
   * as the index probes in shm/log.ts rely on).
   */
  private walk(index: ShardIndex, now: number): Omit<ShardTally, 'index' | 'changes' | 'at'> {
    const bytes = this.region.bytes;
    const floor = index.floor();
    let keys = 0;
    let expires = 0;
    let ttlMs = 0;
    let nextDeadline = Infinity;
    const visit = (addr: number) => {
      if (bytes[addr] !== EntryType.Put || (floor !== 0 && versionAt(bytes, addr) < floor)) return;
      const at = expiresAtOf(bytes, addr);
      if (at === 0) keys++;
      else if (at > now) {
        keys++;
        expires++;
        ttlMs += at - now;
        if (at < nextDeadline) nextDeadline = at;
      }
    };
    for (let b = 0; b < index.bucketCount; ) {
      this.shared.gc?.epochs.enter(this.epochSlot); // addresses taken from the index stay readable until exit
      try {
        b = index.forEachInBuckets(b, COUNT_STEP_BUCKETS, visit);
      } finally {
        this.shared.gc?.epochs.exit(this.epochSlot);
      }
    }
    return { keys, expires, ttlMs, nextDeadline };
  }
}
