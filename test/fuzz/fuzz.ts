// Runs fuzz targets (./targets.ts) on mutated inputs (./mutate.ts) and counts what happened. Input i of
// a target under seed S is always the same bytes, so a finding is replayed by (target, seed, i).
import { mutate, Rng } from './mutate.js';
import { FuzzViolation, type FuzzTarget } from './targets.js';

export interface Finding {
  target: string;
  seed: number;
  input: number;
  kind: 'crash' | 'violation' | 'slow';
  message: string;
  bytes: Uint8Array;
}

export interface FuzzReport {
  target: string;
  inputs: number;
  /** Inputs the target refused with one of its documented errors. */
  refused: number;
  findings: Finding[];
  ms: number;
}

/** An input that takes longer than this is reported as `slow` (a hang in the making). */
export const SLOW_INPUT_MS = 1000;

export function fuzz(t: FuzzTarget, seed: number, inputs: number, now: () => number): FuzzReport {
  const t0 = now();
  const findings: Finding[] = [];
  let refused = 0;
  for (let i = 0; i < inputs; i++) {
    const rng = new Rng((seed * 0x9e3779b1 + i * 0x85ebca6b) >>> 0);
    const bytes = mutate(rng, t.corpus);
    const s = now();
    try {
      t.run(bytes, rng);
    } catch (err) {
      if (err instanceof FuzzViolation) findings.push({ target: t.name, seed, input: i, kind: 'violation', message: err.message, bytes });
      else if (t.expected(err)) refused++;
      else findings.push({ target: t.name, seed, input: i, kind: 'crash', message: String((err as Error)?.stack ?? err), bytes });
    }
    const took = now() - s;
    if (took > SLOW_INPUT_MS) findings.push({ target: t.name, seed, input: i, kind: 'slow', message: `${took.toFixed(0)} ms`, bytes });
  }
  return { target: t.name, inputs, refused, findings, ms: now() - t0 };
}
