// A linearizability checker for client histories of the KV store (issue 10's simulator and the fault
// tests record them). Every key is an independent register: it starts as "not found" (null), a PUT
// sets it, a DEL clears it, and a GET must return what it holds. Linearizability is local (Herlihy &
// Wing), so a history is linearizable exactly when each key's sub-history is, and each key is checked
// on its own by the Wing-Gong-Lowe search in wing-gong.ts.
//
// Outcomes: `fail` operations never took effect and are dropped; an `unknown` write may take effect at
// any time after its invoke or never (porcupine's treatment: its response is +Infinity and the search
// need not place it); an `unknown` GET returned nothing to check and is dropped.
//
// The answer is never a silent pass: a search that runs out of its step budget or time says so
// (`ok: 'unknown'`), and a test should treat that as a failure of the test, not of the store.
import assert from 'node:assert/strict';
import { formatOperation, partitionByKey, type Operation, type PreparedOp } from './history.js';
import { searchRegister, type SearchLimits } from './wing-gong.js';

export { HistoryRecorder, type Operation, type OpKind, type Outcome } from './history.js';

export interface CheckOptions {
  /** Search steps allowed for one key before the answer is undecided (default 20,000,000). */
  maxStepsPerKey?: number;
  /** A limit on the whole check, measured with `now`. */
  timeLimitMs?: number;
  /** The clock for `timeLimitMs` (default performance.now). */
  now?: () => number;
}

export interface Linearizable {
  ok: true;
  keys: number;
  /** Operations the search considered (after dropping failed ones, unknown reads and unread unknown writes). */
  checked: number;
  describe(): string;
}

export interface NotLinearizable {
  ok: false;
  key: string;
  reason: string;
  /** The ops of `key` that show the problem: `prefix`, then `concurrent`, then `culprit`. */
  ops: Operation[];
  /** The longest linearizable prefix the search found, in linearization order. */
  prefix: Operation[];
  /** The operation that could not be placed after `prefix` before its response. */
  culprit: Operation;
  /** Its position in the history given. */
  culpritIndex: number;
  /** Operations still open at that point (the other candidates the search tried). */
  concurrent: Operation[];
  /** The register's value after `prefix`. */
  state: string | null;
  describe(): string;
}

export interface Undecided {
  ok: 'unknown';
  key: string;
  reason: string;
  describe(): string;
}

export type CheckResult = Linearizable | NotLinearizable | Undecided;

const DEFAULT_MAX_STEPS_PER_KEY = 20_000_000;
/** Failure messages show this many of the prefix's last operations. */
const PREFIX_SHOWN = 20;

export function checkLinearizability(history: readonly Operation[], options: CheckOptions = {}): CheckResult {
  const byKey = partitionByKey(history);
  const limits: SearchLimits = { maxSteps: options.maxStepsPerKey ?? DEFAULT_MAX_STEPS_PER_KEY };
  if (options.timeLimitMs !== undefined) {
    const now = options.now ?? (() => performance.now());
    limits.deadline = { now, at: now() + options.timeLimitMs };
  }
  let undecided: Undecided | undefined;
  let total = 0;
  for (const [key, ops] of byKey) {
    total += ops.length;
    const ghost = readOfUnwrittenValue(key, ops, history);
    if (ghost) return ghost;
    if (limits.deadline && limits.deadline.now() >= limits.deadline.at) {
      undecided ??= undecidedResult(key, `the time limit of ${options.timeLimitMs} ms ran out before this key was checked`);
      continue;
    }
    const r = searchRegister(ops, limits);
    if (r.kind === 'linearizable') continue;
    if (r.kind === 'undecided') {
      const why = r.why === 'steps' ? `the search exceeded its budget of ${limits.maxSteps} steps` : `the time limit of ${options.timeLimitMs} ms ran out`;
      undecided ??= undecidedResult(key, `${why} on ${ops.length} ops; raise the limit or shorten the history`);
      continue;
    }
    const at = (i: number): PreparedOp => ops[i] as PreparedOp;
    return violation(key, r.prefix.map(at), at(r.stuck), r.concurrent.map(at), r.state);
  }
  if (undecided) return undecided;
  const keys = byKey.size;
  return { ok: true, keys, checked: total, describe: () => `linearizable: ${total} op${total === 1 ? '' : 's'} over ${keys} key${keys === 1 ? '' : 's'}` };
}

/** Throws an AssertionError that reads as the checker's report unless the history is linearizable. */
export function assertLinearizable(history: readonly Operation[], options?: CheckOptions): void {
  const r = checkLinearizability(history, options);
  if (r.ok !== true) assert.fail(r.describe());
}

/**
 * A completed GET that read a value no possibly-applied PUT of its key wrote needs no search; saying
 * so directly is also the clearest report of a corrupted or misrouted read.
 */
function readOfUnwrittenValue(key: string, ops: readonly PreparedOp[], history: readonly Operation[]): NotLinearizable | undefined {
  const written = new Set<string>();
  for (const p of ops) if (p.op.op === 'put') written.add(p.op.value as string);
  for (const p of ops) {
    const o = p.op;
    if (o.op !== 'get' || !p.completed || o.output === null || o.output === undefined || written.has(o.output)) continue;
    const failed = history.some((h) => h.key === key && h.op === 'put' && h.outcome === 'fail' && h.value === o.output);
    const reason = `${label(p)} read ${JSON.stringify(o.output)}, a value ${failed ? 'only a failed PUT' : 'no PUT of this key'} wrote`;
    return violation(key, [], p, [], null, reason);
  }
  return undefined;
}

function violation(
  key: string,
  prefix: PreparedOp[],
  stuck: PreparedOp,
  concurrent: PreparedOp[],
  state: string | null,
  reason = explain(prefix, stuck, state),
): NotLinearizable {
  const line = (p: PreparedOp): string => `    ${formatOperation(p.op, p.index)}`;
  const describe = (): string => {
    const out = [`key ${JSON.stringify(key)} is not linearizable: ${reason}`];
    if (prefix.length > 0) {
      const shown = prefix.slice(-PREFIX_SHOWN);
      const more = prefix.length > shown.length ? `, last ${shown.length} shown` : '';
      out.push(`  longest linearizable prefix (${prefix.length} op${prefix.length === 1 ? '' : 's'} in linearization order${more}):`, ...shown.map(line));
      out.push(`  after it the register holds ${JSON.stringify(state)}; this op could not be placed next:`);
    } else {
      out.push('  this op could not be placed:');
    }
    out.push(line(stuck));
    const others = concurrent.filter((p) => p !== stuck);
    if (others.length > 0) out.push('  other ops open at that point (each tried next, none leads to a linearization):', ...others.map(line));
    return out.join('\n');
  };
  return {
    ok: false,
    key,
    reason,
    ops: [...prefix, ...concurrent.filter((p) => p !== stuck), stuck].map((p) => p.op),
    prefix: prefix.map((p) => p.op),
    culprit: stuck.op,
    culpritIndex: stuck.index,
    concurrent: concurrent.filter((p) => p !== stuck).map((p) => p.op),
    state,
    describe,
  };
}

function explain(prefix: readonly PreparedOp[], stuck: PreparedOp, state: string | null): string {
  const o = stuck.op;
  if (o.op !== 'get') return `${label(stuck)} responded before the ops that had to precede it could be linearized`;
  // The deepest point can also be one where the GET fits but every continuation was already explored
  // and failed; then the open ops, not the prefix's last write, are where to look.
  if ((o.output ?? null) === state) return `${label(stuck)} fits after the longest linearizable prefix, but no order of the ops open there completes a linearization`;
  const lastWrite = [...prefix].reverse().find((p) => p.op.op !== 'get');
  const by = lastWrite ? `, last written by #${lastWrite.index}` : ' (never written)';
  const holds = state === null ? 'null (not found)' : JSON.stringify(state);
  return `${label(stuck)} read ${JSON.stringify(o.output ?? null)}, but no linearization lets it: the longest linearizable prefix leaves ${holds}${by}`;
}

/** `#3 (c2 get -> "a" [4, 5] ok)` */
function label(p: PreparedOp): string {
  return `#${p.index} (${formatOperation(p.op, p.index).replace(/^#\d+ /, '')})`;
}

function undecidedResult(key: string, reason: string): Undecided {
  return { ok: 'unknown', key, reason, describe: () => `linearizability undecided at key ${JSON.stringify(key)}: ${reason}` };
}
