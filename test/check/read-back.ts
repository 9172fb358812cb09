// Acknowledged writes read back: given a history that ends with one final read of each key (made
// after every client stopped writing), which keys read a value their writes cannot leave there.
//
// The final read of a key may return the result of any write that could be the key's last one before
// the read ended: a write (PUT: its value, DEL: not found) that was acknowledged or whose outcome is
// unknown, invoked before the read ended, and not certainly overwritten before the read began -- that
// is, no acknowledged write of the key was invoked after it completed and completed before the read
// began. "Not found" is also possible while no write is known to have completed before the read.
// Anything else means an acknowledged write was lost (or a value came from nowhere).
//
// This is a necessary condition of linearizability (the full check, test/check/linearizability.ts,
// implies it), computed on its own so a run reports lost writes as a count and by name, not only as
// the first key the search got stuck on.
import type { Operation } from './history.js';

export interface LostWrite {
  key: string;
  /** What the final read returned. */
  read: string | null;
  /** What it could have returned. */
  possible: (string | null)[];
  /** The acknowledged writes no later acknowledged write certainly overwrote before the read. */
  acknowledged: Operation[];
}

export interface ReadBack {
  keys: number;
  /** Keys with an acknowledged write whose last one the final read shows (or a possible unknown one). */
  lost: LostWrite[];
  /** Keys the history has writes for but no completed final read. */
  unread: string[];
}

const resultOf = (w: Operation): string | null => (w.op === 'put' ? (w.value as string) : null);
/** When a write certainly took effect by (its response), Infinity for an unknown outcome. */
const doneBy = (w: Operation): number => (w.outcome === 'ok' ? (w.response as number) : Infinity);

/** `isFinal(op)`: the op is one of the final reads. */
export function readBack(history: readonly Operation[], isFinal: (o: Operation) => boolean): ReadBack {
  const byKey = new Map<string, { writes: Operation[]; final: Operation | null }>();
  for (const o of history) {
    let k = byKey.get(o.key);
    if (!k) byKey.set(o.key, (k = { writes: [], final: null }));
    if (isFinal(o)) {
      if (o.op === 'get' && o.outcome === 'ok' && (k.final === null || (o.response as number) > (k.final.response as number))) k.final = o;
    } else if (o.op !== 'get' && o.outcome !== 'fail') k.writes.push(o);
  }
  const lost: LostWrite[] = [];
  const unread: string[] = [];
  for (const [key, { writes, final }] of byKey) {
    if (writes.length === 0) continue;
    if (final === null) {
      unread.push(key);
      continue;
    }
    const f = final;
    const end = f.response as number;
    const beforeRead = writes.filter((w) => w.outcome === 'ok' && (w.response as number) < f.invoke);
    const overwritten = (w: Operation): boolean => beforeRead.some((w2) => w2.invoke > doneBy(w));
    const candidates = writes.filter((w) => w.invoke < end && !overwritten(w));
    const possible = new Set(candidates.map(resultOf));
    if (beforeRead.length === 0) possible.add(null);
    const read = f.output ?? null;
    if (!possible.has(read)) lost.push({ key, read, possible: [...possible], acknowledged: candidates.filter((w) => w.outcome === 'ok') });
  }
  return { keys: byKey.size, lost, unread };
}
