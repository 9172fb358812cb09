// Synthetic write streams for calibrating the XPBuffer model against ROWAN Figure 2 and for the
// Rowan-vs-rwrite comparison: `streams` senders each append `writeBytes` writes; in the `separate`
// layout every stream appends to its own log (FaRM-style rwrite: one PM write stream per sender), in
// the `merged` layout the same writes land back to back in one log, in arrival order (what Rowan does).

export interface StreamSpec {
  streams: number;
  writeBytes: number;
  writesPerStream: number;
  layout: 'separate' | 'merged';
  seed?: number;
}

/** xorshift32: small, deterministic, good enough to interleave streams. */
export function rng(seed: number): () => number {
  let s = seed >>> 0 || 0x9e3779b9;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x100000000;
  };
}

/**
 * The trace as parallel arrays of addresses and lengths. Arrival order interleaves the streams at
 * random (each step, a random stream with writes left issues its next write), as concurrent remote
 * senders would. Separate logs start at random 64 KiB-aligned places of a 1 GiB range, so streams fall
 * on DIMMs as logs in a real pool would.
 */
export function streamTrace(spec: StreamSpec): { addrs: Float64Array; lens: Uint32Array } {
  const rand = rng(spec.seed ?? 42);
  const total = spec.streams * spec.writesPerStream;
  const addrs = new Float64Array(total);
  const lens = new Uint32Array(total).fill(spec.writeBytes);
  const logBytes = spec.writesPerStream * spec.writeBytes;
  const slot = Math.ceil((logBytes + 12288) / 65536) * 65536;
  const slots = Math.max(spec.streams, Math.floor(2 ** 30 / slot));
  // Distinct random log bases for the separate layout.
  const bases: number[] = [];
  const used = new Set<number>();
  while (bases.length < spec.streams) {
    const k = Math.floor(rand() * slots);
    if (!used.has(k)) {
      used.add(k);
      // A random 256 B-aligned phase inside three interleave units, so streams do not cross DIMM
      // boundaries in lockstep (real logs start wherever their segment and tail happen to be).
      bases.push(k * slot + Math.floor(rand() * 48) * 256);
    }
  }
  const next = new Array<number>(spec.streams).fill(0);
  const live = Array.from({ length: spec.streams }, (_, i) => i);
  let merged = 0;
  for (let i = 0; i < total; i++) {
    const pick = Math.floor(rand() * live.length);
    const s = live[pick]!;
    if (spec.layout === 'separate') addrs[i] = bases[s]! + next[s]! * spec.writeBytes;
    else addrs[i] = (merged++) * spec.writeBytes;
    if (++next[s]! === spec.writesPerStream) {
      live[pick] = live[live.length - 1]!;
      live.pop();
    }
  }
  return { addrs, lens };
}
