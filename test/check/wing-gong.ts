// The search at the heart of the checker: Wing & Gong's linearizability test with Lowe's memoization,
// as porcupine implements it (checkSingle), for one key's register (PUT sets, DEL clears, GET reads).
//
// Every operation becomes two entries, its call and its return, in one doubly linked list ordered by
// time (calls before returns at equal times, so touching operations are concurrent). The search walks
// the list from the front: a call whose operation the register accepts in the current state is
// linearized -- both its entries are unlinked ("lifted") and the walk restarts at the front. Reaching a
// return entry means that operation's response came before it could be placed in this order, so the
// search backtracks: it relinks the last linearized call and tries the call after it. Lifting and
// relinking in stack order keeps every removed entry's own links valid (dancing links), so both are
// O(1). The memo of (set of linearized operations, register state) pairs already explored
// (visited.ts) is what makes this polynomial for bounded concurrency: two orders that reach the same
// pair have the same future, so only the first is explored.
//
// An unknown-outcome write has its return at +Infinity, so it can be linearized anywhere after its
// invoke; the search succeeds as soon as every completed operation is linearized, leaving the unknown
// writes it never needed out (an unknown write linearized last would change nothing anyone read).
import type { PreparedOp } from './history.js';
import { VisitedSet } from './visited.js';

export interface SearchLimits {
  /** Loop iterations this key may take before the search gives up undecided. */
  maxSteps: number;
  /** A wall-clock (or simulated) deadline, read every few thousand steps. */
  deadline?: { now: () => number; at: number };
}

export type SearchOutcome =
  | { kind: 'linearizable'; steps: number }
  | {
      kind: 'violation';
      steps: number;
      /** Positions (into the ops given) of the longest linearizable prefix found, in order. */
      prefix: number[];
      /** The operation whose response came before any order could place it after `prefix`. */
      stuck: number;
      /** Operations still open at that point, which the search also tried to place next. */
      concurrent: number[];
      /** The register's value after `prefix`. */
      state: string | null;
    }
  | { kind: 'undecided'; steps: number; why: 'steps' | 'time' };

const PUT = 0;
const GET = 1;
const DEL = 2;
/** The interned id of "not found" (the initial state, and what a DEL leaves). */
const ABSENT = 0;
const DEADLINE_EVERY = 4096;

export function searchRegister(given: readonly PreparedOp[], limits: SearchLimits): SearchOutcome {
  // Number operations by invoke time (the memo's frontier relies on it); `given[position[i]]` is i.
  const position = given.map((_, i) => i).sort((a, b) => (given[a] as PreparedOp).invoke - (given[b] as PreparedOp).invoke || a - b);
  const ops = position.map((i) => given[i] as PreparedOp);
  const n = ops.length;
  const { kind, arg, values } = encode(ops);
  const { next, prev, head } = buildEntryList(ops);
  const zobrist = zobristTable(n);

  const bits = new Uint32Array((n + 31) >>> 5);
  let setHash = 0;
  // The first operation not linearized, and the last one that is (-1: none).
  let front = 0;
  let last = -1;
  const visited = new VisitedSet(2 * n);
  // The stack of linearized operations, with what each one changed.
  const stackOp = new Int32Array(n);
  const stackState = new Int32Array(n);
  const stackFront = new Int32Array(n);
  const stackLast = new Int32Array(n);
  let depth = 0;
  let state = ABSENT;
  let remaining = ops.reduce((k, p) => k + (p.completed ? 1 : 0), 0);
  // The deepest point where an operation could not be placed: its prefix is copied incrementally,
  // only the part of the stack popped since the last copy (`unchangedBelow`), so recording it stays
  // linear in the steps taken rather than quadratic in the history.
  const bestPrefix = new Int32Array(n);
  let best: { depth: number; stuck: number; state: number; concurrent: number[] } | undefined;
  let unchangedBelow = 0;
  let steps = 0;

  const lift = (i: number): void => {
    const c = 2 * i;
    const r = c + 1;
    next[prev[c]] = next[c];
    prev[next[c]] = prev[c];
    next[prev[r]] = next[r];
    prev[next[r]] = prev[r];
  };
  const unlift = (i: number): void => {
    const c = 2 * i;
    const r = c + 1;
    next[prev[r]] = r;
    prev[next[r]] = r;
    next[prev[c]] = c;
    prev[next[c]] = c;
  };
  const flip = (i: number): void => {
    bits[i >>> 5] ^= 1 << (i & 31);
    setHash ^= zobrist[i];
  };
  const isSet = (i: number): boolean => (bits[i >>> 5] & (1 << (i & 31))) !== 0;

  let entry = next[head];
  while (remaining > 0) {
    steps++;
    if (steps > limits.maxSteps) return { kind: 'undecided', steps, why: 'steps' };
    if (limits.deadline && steps % DEADLINE_EVERY === 0 && limits.deadline.now() >= limits.deadline.at) {
      return { kind: 'undecided', steps, why: 'time' };
    }
    const i = entry >>> 1;
    if ((entry & 1) === 0) {
      // A call: try to linearize operation i now.
      const k = kind[i];
      if (k === GET && arg[i] !== state) {
        entry = next[entry];
        continue;
      }
      const after = k === PUT ? arg[i] : k === DEL ? ABSENT : state;
      flip(i);
      let f = front;
      if (i === f) while (f < n && isSet(f)) f++;
      const l = Math.max(last, i);
      if (visited.add((setHash ^ Math.imul(after + 1, 0x9e3779b1)) | 0, bits, f, l, after)) {
        stackOp[depth] = i;
        stackState[depth] = state;
        stackFront[depth] = front;
        stackLast[depth] = last;
        depth++;
        state = after;
        front = f;
        last = l;
        lift(i);
        if (ops[i].completed) remaining--;
        entry = next[head];
      } else {
        flip(i);
        entry = next[entry];
      }
      continue;
    }
    // A return: operation i cannot be placed after the current prefix. Remember the deepest such
    // point for the report, then undo the last linearization and try what came after it.
    if (!best || depth > best.depth) {
      bestPrefix.set(stackOp.subarray(unchangedBelow, depth), unchangedBelow);
      unchangedBelow = depth;
      best = { depth, stuck: i, state, concurrent: openBefore(i) };
    }
    if (depth === 0) break;
    depth--;
    unchangedBelow = Math.min(unchangedBelow, depth);
    const j = stackOp[depth];
    state = stackState[depth];
    front = stackFront[depth];
    last = stackLast[depth];
    flip(j);
    unlift(j);
    if (ops[j].completed) remaining++;
    entry = next[2 * j];
  }
  if (remaining === 0 || !best) return { kind: 'linearizable', steps };
  const at = (r: number): number => position[r] as number;
  const prefix = Array.from(bestPrefix.subarray(0, best.depth), at);
  return { kind: 'violation', steps, prefix, stuck: at(best.stuck), concurrent: best.concurrent.map(at), state: values[best.state] ?? null };

  /** The operations whose calls precede operation `stuck`'s return: those the search could try next. */
  function openBefore(stuck: number): number[] {
    const open: number[] = [];
    for (let e = next[head]; e !== 2 * stuck + 1; e = next[e]) if ((e & 1) === 0) open.push(e >>> 1);
    return open;
  }
}

/** Interns values as small integers (null is ABSENT) so states compare and hash as numbers. */
function encode(ops: readonly PreparedOp[]): { kind: Uint8Array; arg: Int32Array; values: (string | null)[] } {
  const ids = new Map<string, number>();
  const values: (string | null)[] = [null];
  const intern = (v: string | null | undefined): number => {
    if (v === null || v === undefined) return ABSENT;
    let id = ids.get(v);
    if (id === undefined) {
      id = values.length;
      ids.set(v, id);
      values.push(v);
    }
    return id;
  };
  const kind = new Uint8Array(ops.length);
  const arg = new Int32Array(ops.length);
  ops.forEach((p, i) => {
    const o = p.op;
    kind[i] = o.op === 'put' ? PUT : o.op === 'get' ? GET : DEL;
    arg[i] = o.op === 'put' ? intern(o.value) : o.op === 'get' ? intern(o.output) : ABSENT;
  });
  return { kind, arg, values };
}

/**
 * Entries 2i and 2i+1 are operation i's call and return; `head` and `head + 1` are the sentinels at
 * the two ends, so no link is ever null.
 */
function buildEntryList(ops: readonly PreparedOp[]): { next: Int32Array; prev: Int32Array; head: number } {
  const n = ops.length;
  const order: number[] = [];
  for (let e = 0; e < 2 * n; e++) order.push(e);
  const time = (e: number): number => ((e & 1) === 0 ? ops[e >>> 1].invoke : ops[e >>> 1].response);
  order.sort((a, b) => time(a) - time(b) || (a & 1) - (b & 1) || a - b);
  const head = 2 * n;
  const tail = head + 1;
  const next = new Int32Array(2 * n + 2);
  const prev = new Int32Array(2 * n + 2);
  let last = head;
  for (const e of order) {
    next[last] = e;
    prev[e] = last;
    last = e;
  }
  next[last] = tail;
  prev[tail] = last;
  next[tail] = tail;
  prev[head] = head;
  return { next, prev, head };
}

/** A random word per operation (fixed seed, so runs repeat) for Zobrist hashing of sets. */
function zobristTable(n: number): Int32Array {
  let s = 0x2545f491;
  const table = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    // splitmix32
    s = (s + 0x9e3779b9) | 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    table[i] = z ^ (z >>> 16);
  }
  return table;
}
