// Client histories for the linearizability checker: what one operation looks like, a recorder that
// builds a history as a test or the simulator runs, and the per-key preparation the search starts from.
//
// Times are plain numbers (wall milliseconds, simulated ticks): only their order matters. An operation
// whose invoke time equals another's response time counts as concurrent with it (as in porcupine): a
// clock too coarse to order two events must not make the checker reject a correct history.
import assert from 'node:assert/strict';

export type OpKind = 'put' | 'get' | 'del';

/**
 * - `ok`: the client saw the operation complete; a GET's `output` is what it read.
 * - `fail`: the operation definitely did not take effect (refused before it was applied).
 * - `unknown`: the client gave up (timeout, lost connection, crash); the operation may take effect at
 *   any time after its invoke, or never.
 */
export type Outcome = 'ok' | 'fail' | 'unknown';

export interface Operation {
  client: number;
  key: string;
  op: OpKind;
  /** The value a PUT writes. */
  value?: string;
  /** What a completed GET read; null means not found. */
  output?: string | null;
  invoke: number;
  /** When the client saw the outcome; undefined while pending, and ignored for `unknown`. */
  response: number | undefined;
  outcome: Outcome;
}

/** One operation as the search sees it: `index` is its position in the original history. */
export interface PreparedOp {
  index: number;
  op: Operation;
  invoke: number;
  /** Infinity for an unknown-outcome write: it may be linearized at any point after its invoke. */
  response: number;
  /** False for an unknown-outcome write, which the search may leave out. */
  completed: boolean;
}

/** A malformed history is a bug in whatever recorded it, not a finding about the store. */
export function validateOperation(o: Operation, index: number): void {
  const where = `history[${index}]`;
  assert.ok(o.op === 'put' || o.op === 'get' || o.op === 'del', `${where}: unknown op ${String(o.op)}`);
  assert.ok(o.outcome === 'ok' || o.outcome === 'fail' || o.outcome === 'unknown', `${where}: unknown outcome ${String(o.outcome)}`);
  assert.equal(typeof o.key, 'string', `${where}: key must be a string`);
  assert.ok(Number.isFinite(o.invoke), `${where}: invoke must be a finite number`);
  if (o.op === 'put') assert.equal(typeof o.value, 'string', `${where}: a put needs a string value`);
  if (o.outcome !== 'ok') return;
  assert.ok(o.response !== undefined && Number.isFinite(o.response), `${where}: a completed op needs a finite response time`);
  assert.ok(o.response >= o.invoke, `${where}: response ${o.response} is before invoke ${o.invoke}`);
  if (o.op === 'get') assert.ok(o.output === null || typeof o.output === 'string', `${where}: a completed get needs an output (string or null)`);
}

/**
 * Splits a history into one register per key and drops what cannot constrain the search:
 * - a `fail` operation never took effect;
 * - an `unknown` GET has no output to check;
 * - an `unknown` write whose result no completed GET of that key ever read (a PUT whose value no one
 *   read, a DEL when no one read "not found"). Such a write, wherever it is linearized, is followed by
 *   another write before any read, so leaving it out changes no read; keeping it would only double the
 *   search for every one of them.
 */
export function partitionByKey(history: readonly Operation[]): Map<string, PreparedOp[]> {
  history.forEach(validateOperation);
  const observed = new Map<string, Set<string | null>>();
  for (const o of history) {
    if (o.op !== 'get' || o.outcome !== 'ok') continue;
    let seen = observed.get(o.key);
    if (!seen) observed.set(o.key, (seen = new Set()));
    seen.add(o.output ?? null);
  }
  const byKey = new Map<string, PreparedOp[]>();
  history.forEach((o, index) => {
    if (o.outcome === 'fail') return;
    if (o.outcome === 'unknown') {
      if (o.op === 'get') return;
      const result = o.op === 'put' ? (o.value as string) : null;
      if (!observed.get(o.key)?.has(result)) return;
    }
    const completed = o.outcome === 'ok';
    const p: PreparedOp = { index, op: o, invoke: o.invoke, response: completed ? (o.response as number) : Infinity, completed };
    let list = byKey.get(o.key);
    if (!list) byKey.set(o.key, (list = []));
    list.push(p);
  });
  return byKey;
}

/** One line per operation for failure messages: `#12 c3 put "v" [40, 52] ok`. */
export function formatOperation(o: Operation, index: number): string {
  const q = (v: string | null | undefined): string => (v === null || v === undefined ? 'null' : JSON.stringify(v));
  const what = o.op === 'put' ? `put ${q(o.value)}` : o.op === 'del' ? 'del' : o.outcome === 'ok' ? `get -> ${q(o.output)}` : 'get';
  const end = o.outcome === 'ok' ? String(o.response) : o.response === undefined ? '?' : `${o.response}?`;
  return `#${index} c${o.client} ${what} [${o.invoke}, ${end}] ${o.outcome}`;
}

/**
 * Records a history while clients run. The clock is injected so the same recorder serves wall-clock
 * tests and the simulator's ticks; the recorder itself never reads a clock of its own.
 */
export class HistoryRecorder {
  private readonly ops: Operation[] = [];
  private readonly open = new Set<number>();

  constructor(private readonly now: () => number) {}

  /** Starts an operation; the returned id is what `ok`, `fail` or `unknown` take. */
  invoke(client: number, key: string, op: OpKind, value?: string): number {
    assert.ok(op !== 'put' || typeof value === 'string', 'HistoryRecorder.invoke: a put needs a string value');
    assert.ok(op === 'put' || value === undefined, `HistoryRecorder.invoke: a ${op} takes no value`);
    const o: Operation = { client, key, op, invoke: this.now(), response: undefined, outcome: 'unknown' };
    if (op === 'put') o.value = value as string;
    this.open.add(this.ops.length);
    this.ops.push(o);
    return this.ops.length - 1;
  }

  /** The operation completed; a GET passes what it read (null for not found). */
  ok(id: number, output?: string | null): void {
    const o = this.close(id, 'ok');
    if (o.op === 'get') {
      assert.ok(output === null || typeof output === 'string', `HistoryRecorder.ok(${id}): a get needs its output (string or null)`);
      o.output = output;
    } else {
      assert.equal(output, undefined, `HistoryRecorder.ok(${id}): a ${o.op} has no output`);
    }
  }

  /** The operation definitely did not take effect. */
  fail(id: number): void {
    this.close(id, 'fail');
  }

  /** The client gave up without knowing whether the operation took effect. */
  unknown(id: number): void {
    this.close(id, 'unknown');
  }

  /** Operations invoked so far. */
  get size(): number {
    return this.ops.length;
  }

  /** A copy of the history; operations still open are reported with an unknown outcome. */
  history(): Operation[] {
    return this.ops.map((o) => ({ ...o }));
  }

  private close(id: number, outcome: Outcome): Operation {
    assert.ok(this.open.delete(id), `HistoryRecorder: operation ${id} is not open (never invoked, or already resolved)`);
    const o = this.ops[id] as Operation;
    o.outcome = outcome;
    o.response = this.now();
    return o;
  }
}
