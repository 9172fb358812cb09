// SCAN and DBSIZE over the node's shard indexes (shm/index.ts). A cursor names a shard and a home
// bucket: cursor = shard * 2^32 + bucket. Keys never leave their home bucket's chain and the tables
// never resize, so a full SCAN returns every key that existed for the whole scan at least once (the
// Redis guarantee), whatever COUNT is. Each call walks one shard at most; 0 means done.
import type { Limits } from '../../../config/limits.js';
import { ReadEpochs } from '../../shared/gc-state.js';
import type { KvShared } from '../../shared/node-shared.js';
import { EntryType, expiresAtOf, readEntryAt, versionAt } from '../../../shm/log.js';
import type { PersistentRegion } from '../../../config/base/region.js';

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

export class Keyspace {
  private readonly epochSlot: number;

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

  /** Live keys (not deleted) in these shards: a full walk, O(keys). */
  count(shards: number[]): number {
    return this.tally(shards).keys;
  }

  /**
   * Live keys in these shards, how many of them have a deadline, and their mean time to live: one walk
   * of the indexes, O(keys), reading only each entry's type and deadline in place (no checksum pass, no
   * key copied: an indexed entry was verified when it was indexed and does not change while indexed,
   * as the index probes in shm/log.ts rely on). A key whose deadline passed is not counted.
   */
  tally(shards: number[]): KeyTally {
    const bytes = this.region.bytes;
    const now = this.now();
    let keys = 0;
    let expires = 0;
    let ttlMs = 0;
    let floor = 0;
    const visit = (addr: number) => {
      if (bytes[addr] !== EntryType.Put || (floor !== 0 && versionAt(bytes, addr) < floor)) return;
      const at = expiresAtOf(bytes, addr);
      if (at === 0) keys++;
      else if (at > now) {
        keys++;
        expires++;
        ttlMs += at - now;
      }
    };
    for (const s of shards) {
      const index = this.shared.indexes[s];
      floor = index?.floor() ?? 0;
      for (let b = 0; index && b < index.bucketCount; ) {
        this.shared.gc?.epochs.enter(this.epochSlot); // addresses taken from the index stay readable until exit
        try {
          b = index.forEachInBuckets(b, COUNT_STEP_BUCKETS, visit);
        } finally {
          this.shared.gc?.epochs.exit(this.epochSlot);
        }
      }
    }
    return { keys, expires, avgTtlMs: expires > 0 ? Math.round(ttlMs / expires) : 0 };
  }
}
