// Kill -9 against the t-log on a real pool file. A child (test/fixtures/log-crash-child.ts) recovers
// worker 0's t-log and appends entries of random sizes — some multi-block — as fast as it can,
// reporting each index whose append returned. The parent SIGKILLs it at a random moment (sometimes
// during startup and recovery), then reopens the pool and scans the chain:
//   - every acknowledged entry is there, byte for byte;
//   - every scanned entry is exactly one intended entry, in append order with no gaps (so no torn or
//     partial entry is ever accepted, and recovery put the tail in the right place);
//   - what an earlier run left in the log never changes afterwards.
// Each run continues the same pool (recovery, then append) until the pool runs low on segments; then
// the test moves to a fresh pool file.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool, SegmentState } from '../../shm/pool.js';
import { TLog } from '../../shm/tlog.js';
import { CRASH_LIMITS, CRASH_SEGMENT_BYTES, CRASH_SEGMENT_COUNT, crashEntry, whichEntry } from '../fixtures/log-crash-entries.js';

/** ROWAN_LOG_CRASH_KILLS lowers both (test/fault/bare-machine.test.ts repeats this test over libc). */
const KILLS_MIN = Number(process.env['ROWAN_LOG_CRASH_KILLS'] ?? 50);
const KILLS_TARGET = Math.max(KILLS_MIN, Number(process.env['ROWAN_LOG_CRASH_KILLS'] ?? 64));
/** Stop adding kills past this point (once KILLS_MIN is reached) to stay inside the time budget. */
const BUDGET_MS = 45_000;
/** Fraction of kills aimed at startup/recovery rather than at the append loop. */
const EARLY_KILL_SHARE = 0.15;
const CHILD = fileURLToPath(new URL('../fixtures/log-crash-child.js', import.meta.url));
const L = CRASH_LIMITS;

interface RunResult {
  /** Highest index the child acknowledged, -1 for none. */
  acked: number;
  phase: 'startup' | 'append' | 'full';
}

function runAndKill(poolPath: string, run: number): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = fork(CHILD, [poolPath, String(run)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const res: RunResult = { acked: -1, phase: 'startup' };
    const kill = (): void => {
      child.kill('SIGKILL');
    };
    const early = Math.random() < EARLY_KILL_SHARE;
    if (early) setTimeout(kill, Math.random() * 150);
    child.on('message', (m: { t: string; i?: number }) => {
      if (m.t === 'ack') res.acked = m.i!;
      else if (m.t === 'full') res.phase = 'full';
      else if (m.t === 'ready') {
        res.phase = 'append';
        if (!early) setTimeout(kill, 1 + Math.random() * 40);
      }
    });
    child.on('error', reject);
    // 'close' comes after the exit and after the IPC channel has delivered every message it carried.
    child.on('close', (code, signal) => {
      if (signal === 'SIGKILL') resolve(res);
      else reject(new Error(`child of run ${run} ended by itself (code ${code}, signal ${signal})`));
    });
  });
}

interface Scan {
  countByRun: Map<number, number>;
  multiByRun: Map<number, number>;
  /** Non-zero bytes after the last intact entry of the open segment: a torn append the kill left. */
  tornTail: boolean;
  freeSegments: number;
}

function scanPool(poolPath: string, runsInPool: Set<number>): Scan {
  const pool = Pool.open(poolPath, { mode: 'pagecache' });
  try {
    const log = new TLog(pool, 0, L);
    const countByRun = new Map<number, number>();
    const multiByRun = new Map<number, number>();
    let prev = { run: -1, i: -1 };
    let lastEnd = -1;
    for (const e of log.entries()) {
      const at = whichEntry(e.version);
      assert.ok(runsInPool.has(at.run), `entry of run ${at.run} does not belong in this pool`);
      assert.ok((at.run === prev.run && at.i === prev.i + 1) || (at.run > prev.run && at.i === 0),
        `entry (${at.run}, ${at.i}) after (${prev.run}, ${prev.i}): a gap or reordering`);
      const want = crashEntry(at.run, at.i);
      assert.equal(e.type, want.type);
      assert.equal(e.shard, want.shard);
      assert.ok(Buffer.from(e.key).equals(want.key ?? new Uint8Array(0)), `key of (${at.run}, ${at.i})`);
      assert.ok(Buffer.from(e.value).equals(want.value ?? new Uint8Array(0)), `value of (${at.run}, ${at.i})`);
      countByRun.set(at.run, at.i + 1);
      if (e.bytes > L.mtuBytes) multiByRun.set(at.run, (multiByRun.get(at.run) ?? 0) + 1);
      prev = at;
      lastEnd = e.offset + e.bytes;
    }
    return { countByRun, multiByRun, tornTail: hasTornTail(pool, log, lastEnd), freeSegments: pool.segments({ state: SegmentState.Free }).length };
  } finally {
    pool.close();
  }
}

function hasTornTail(pool: Pool, log: TLog, lastEnd: number): boolean {
  const open = log.segments().at(-1);
  if (open === undefined || pool.meta(open).state !== SegmentState.Using) return false;
  const start = pool.segmentOffset(open);
  const from = lastEnd >= start && lastEnd <= start + pool.segmentBytes ? lastEnd : start;
  return pool.region.bytes.subarray(from, start + pool.segmentBytes).some((x) => x !== 0);
}

function createPool(path: string): void {
  Pool.create(path, { segmentCount: CRASH_SEGMENT_COUNT, segmentBytes: CRASH_SEGMENT_BYTES, mode: 'pagecache' }).close();
}

describe('t-log under SIGKILL', () => {
  it('keeps every acknowledged entry byte-exact and never accepts a torn one', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rowan-log-crash-'));
    const started = Date.now();
    const stats = { kills: 0, startupKills: 0, fullKills: 0, pools: 1, acked: 0, scanned: 0, multiBlock: 0, tornTails: 0 };
    try {
      let poolPath = join(dir, 'pool-0.pm');
      createPool(poolPath);
      let runsInPool = new Set<number>();
      const frozen = new Map<number, number>();
      for (let run = 0; run < KILLS_TARGET && (run < KILLS_MIN || Date.now() - started < BUDGET_MS); run++) {
        runsInPool.add(run);
        const res = await runAndKill(poolPath, run);
        stats.kills++;
        if (res.phase === 'startup') stats.startupKills++;
        if (res.phase === 'full') stats.fullKills++;
        stats.acked += res.acked + 1;

        const scan = scanPool(poolPath, runsInPool);
        const have = scan.countByRun.get(run) ?? 0;
        assert.ok(have >= res.acked + 1, `run ${run}: ${res.acked + 1} acknowledged, only ${have} in the log`);
        for (const [r, n] of frozen) {
          if (runsInPool.has(r)) assert.equal(scan.countByRun.get(r) ?? 0, n, `run ${r} changed after it ended`);
        }
        frozen.set(run, have);
        stats.scanned += have;
        stats.multiBlock += scan.multiByRun.get(run) ?? 0;
        if (scan.tornTail) stats.tornTails++;

        if (scan.freeSegments < CRASH_SEGMENT_COUNT / 4) {
          rmSync(poolPath);
          poolPath = join(dir, `pool-${stats.pools++}.pm`);
          createPool(poolPath);
          runsInPool = new Set();
        }
      }
      console.log(`log-crash: kills=${stats.kills} (startup=${stats.startupKills}, pool-full=${stats.fullKills}) `
        + `pools=${stats.pools} acked=${stats.acked} scanned=${stats.scanned} multi-block=${stats.multiBlock} `
        + `torn-tails=${stats.tornTails} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      assert.ok(stats.kills >= KILLS_MIN);
      assert.ok(stats.multiBlock > 0, 'the runs must include multi-block entries');
      assert.ok(stats.kills - stats.startupKills - stats.fullKills > KILLS_MIN / 2, 'most kills must land mid-append');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
