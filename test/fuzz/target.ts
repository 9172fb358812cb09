// What every fuzz target is (test/fuzz/targets.ts lists them) and what one throws when data it
// accepted is wrong, apart from crashes.
import type { Rng } from './mutate.js';

export class FuzzViolation extends Error {}

export interface FuzzTarget {
  name: string;
  corpus: Uint8Array[];
  run(input: Uint8Array, rng: Rng): void;
  /** Errors that are the target's documented refusals, not crashes. */
  expected(err: unknown): boolean;
  /** Whether bad input is refused with an error (parsers) or skipped silently (scanners). */
  refuses: boolean;
}
