// A model of Optane DC PMM write combining (ROWAN §2.1, §2.4; DESIGN §8), to turn a PM write trace into
// device-level write amplification (DLWA = media bytes / request bytes). Real DLWA comes from ipmctl
// hardware counters; this machine has no PM, so the benchmarks feed their persist trace through this.
//
// What is modelled:
//  - the memory controller issues 64 B cache-line writes (a persist of N bytes covers ceil(N/64) lines);
//  - physical addresses interleave across `dimms` DIMMs every `interleaveBytes` (4 KiB);
//  - the media writes 256 B XPLines; each DIMM has an XPBuffer of `bufferBytes` holding XPLines being
//    combined. A line whose four 64 B parts are all written drains to media as one 256 B write. A line
//    evicted before it is complete costs a read-modify-write: 256 B written for less than 256 B of
//    request. Eviction is LRU.
//
// Calibration (test/unit/bench/xpbuffer.test.ts pins it; `npm run bench -- dlwa` prints the sweep).
// Paper, Figure 2(a)/(b): DLWA negligible below ~90 remote streams; at 144 streams 2.48x for 64 B
// writes and 1.58x for 128 B writes. The ~16 KB buffer Yang et al. estimate (64 XPLines per DIMM)
// never thrashes under LRU at 144 streams over 3 DIMMs (48 open lines per DIMM), so the capacity left
// for combining concurrent streams must be smaller. Swept on random-phase streams (bench/dlwa/streams.ts):
//   bufferBytes   64B@72  64B@90  64B@144  128B@144
//   6 KiB         1.05-1.10  1.6   2.54     1.38
//   7 KiB         1.00    1.2     2.30     1.21     <- chosen
//   8 KiB         1.00    1.05    2.05     1.07
// 7 KiB matches the 64 B curve's onset and height; every setting that keeps <= 72 streams at ~1.0
// under-predicts the 128 B curve, so the model errs in the baselines' favour (it understates rwrite's
// DLWA), never in Rowan's. Keeping complete lines resident until LRU eviction (instead of draining them)
// was tried and fits worse (64 B @ 144 streams: 1.59 at 12 KiB while 72 streams already reach 1.03).

export interface XPBufferParams {
  dimms: number;
  interleaveBytes: number;
  xplineBytes: number;
  cachelineBytes: number;
  /** Effective write-combining capacity per DIMM, in bytes (a multiple of xplineBytes). */
  bufferBytes: number;
}

export const optaneParams: Readonly<XPBufferParams> = Object.freeze({
  dimms: 3,
  interleaveBytes: 4096,
  xplineBytes: 256,
  cachelineBytes: 64,
  bufferBytes: 7 * 1024,
});

export interface DlwaResult {
  requestBytes: number;
  mediaBytes: number;
  /** Lines written to media before all their cache lines arrived (each cost a read-modify-write). */
  partialEvictions: number;
  dlwa: number;
}

/** One DIMM's XPBuffer: an LRU of XPLine numbers with a bitmask of which 64 B parts are written. */
class DimmBuffer {
  // Map iteration order is insertion order: deleting and re-inserting a key moves it to the back,
  // so the first key is always the least recently used line.
  private readonly lines = new Map<number, number>();
  constructor(
    private readonly capacity: number,
    private readonly fullMask: number,
    private readonly out: { mediaLines: number; partial: number },
  ) {}

  write(line: number, partBit: number): void {
    const prev = this.lines.get(line);
    if (prev !== undefined) this.lines.delete(line);
    else if (this.lines.size >= this.capacity) this.evictOldest();
    const mask = (prev ?? 0) | partBit;
    if (mask === this.fullMask) {
      this.out.mediaLines++; // complete line drains as one media write
      return;
    }
    this.lines.set(line, mask);
  }

  private evictOldest(): void {
    const oldest = this.lines.keys().next().value as number;
    this.lines.delete(oldest);
    this.out.mediaLines++;
    this.out.partial++;
  }

  drain(): void {
    for (const mask of this.lines.values()) {
      this.out.mediaLines++;
      if (mask !== this.fullMask) this.out.partial++;
    }
    this.lines.clear();
  }
}

export class XPBufferModel {
  private readonly p: XPBufferParams;
  private readonly buffers: DimmBuffer[];
  private readonly counts = { mediaLines: 0, partial: 0 };
  private requestLines = 0;
  private readonly partsPerLine: number;

  constructor(params: Partial<XPBufferParams> = {}) {
    this.p = { ...optaneParams, ...params };
    const { xplineBytes, cachelineBytes, bufferBytes, dimms } = this.p;
    if (xplineBytes % cachelineBytes !== 0 || bufferBytes % xplineBytes !== 0) {
      throw new RangeError('xplineBytes must be a multiple of cachelineBytes, bufferBytes of xplineBytes');
    }
    this.partsPerLine = xplineBytes / cachelineBytes;
    const fullMask = (1 << this.partsPerLine) - 1;
    this.buffers = Array.from(
      { length: dimms },
      () => new DimmBuffer(bufferBytes / xplineBytes, fullMask, this.counts),
    );
  }

  /** A persist of [addr, addr+len): every 64 B cache line it covers is one request to the DIMMs. */
  write(addr: number, len: number): void {
    const cl = this.p.cachelineBytes;
    const first = Math.floor(addr / cl);
    const last = Math.floor((addr + Math.max(len, 1) - 1) / cl);
    for (let c = first; c <= last; c++) this.writeCacheline(c * cl);
  }

  private writeCacheline(addr: number): void {
    const { interleaveBytes, dimms, xplineBytes, cachelineBytes } = this.p;
    const dimm = Math.floor(addr / interleaveBytes) % dimms;
    const line = Math.floor(addr / xplineBytes);
    const part = Math.floor((addr % xplineBytes) / cachelineBytes);
    this.requestLines++;
    this.buffers[dimm]!.write(line, 1 << part);
  }

  /** Drain the buffers (end of trace) and report. */
  finish(): DlwaResult {
    for (const b of this.buffers) b.drain();
    const requestBytes = this.requestLines * this.p.cachelineBytes;
    const mediaBytes = this.counts.mediaLines * this.p.xplineBytes;
    return {
      requestBytes,
      mediaBytes,
      partialEvictions: this.counts.partial,
      dlwa: requestBytes === 0 ? 1 : mediaBytes / requestBytes,
    };
  }
}

/** DLWA of a whole trace of (address, length) pairs. */
export function modelDlwa(
  addrs: ArrayLike<number>,
  lens: ArrayLike<number>,
  params: Partial<XPBufferParams> = {},
): DlwaResult {
  const m = new XPBufferModel(params);
  for (let i = 0; i < addrs.length; i++) m.write(addrs[i]!, lens[i]!);
  return m.finish();
}
