// Creating a shared receive queue (srq.ts): the options, their checks and the fresh header (layout:
// srq-layout.ts).
import { defaultLimits } from '../../config/limits.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import * as L from './srq-layout.js';

export interface SrqCreateOptions {
  /** Posted-ring slots: the most buffers that can be posted and not yet consumed. */
  postCap: number;
  /** Ring CQ slots (a power of two). */
  cqCap: number;
  strideBytes?: number;
  /** The longest buffer that will be posted (default: the paper's 4 MiB segment); sizes the cursor's stride field. */
  bufferBytesMax?: number;
}

/** Check the options and size the cursor; BAD_CONFIG on a bad combination. */
export function checkGeometry(o: SrqCreateOptions): L.CursorGeometry {
  const stride = o.strideBytes ?? 64;
  const bufferBytesMax = o.bufferBytesMax ?? defaultLimits.segmentBytes;
  if (!Number.isInteger(o.postCap) || o.postCap < 2) bad(`postCap must be an integer >= 2, got ${o.postCap}`);
  if (!Number.isInteger(o.cqCap) || o.cqCap < 2 || (o.cqCap & (o.cqCap - 1)) !== 0)
    bad(`cqCap must be a power of two >= 2, got ${o.cqCap}`);
  if (!Number.isInteger(bufferBytesMax) || bufferBytesMax < stride || bufferBytesMax % stride !== 0)
    bad(`bufferBytesMax must be a positive multiple of the ${stride} B stride, got ${bufferBytesMax}`);
  const g = L.cursorGeometry(bufferBytesMax, stride, o.postCap);
  if (!g) bad(`postCap ${o.postCap} is too large for a one-word cursor over buffers of up to ${bufferBytesMax} B`);
  return g;
}

/** Write a fresh queue's header into zeroed memory (the magic last). */
export function format(bytes: Uint8Array, o: SrqCreateOptions, g: L.CursorGeometry, incarnation: Uint8Array): void {
  const i32 = new Int32Array(bytes.buffer, bytes.byteOffset, bytes.length >> 2);
  const inc = new DataView(incarnation.buffer, incarnation.byteOffset, 8);
  i32[L.W_VERSION] = L.SRQ_VERSION;
  i32[L.W_POST_CAP] = o.postCap;
  i32[L.W_CQ_CAP] = o.cqCap;
  i32[L.W_STRIDE] = o.strideBytes ?? 64;
  i32[L.W_INCARNATION_LO] = inc.getInt32(0, true);
  i32[L.W_INCARNATION_HI] = inc.getInt32(4, true);
  i32[L.W_RING] = g.ring;
  i32[L.W_STRIDE_BITS] = g.strideBits;
  i32[L.W_CQ_SHARDS] = L.cqShardsFor(o.cqCap);
  for (let n = 0; n < g.ring; n++) i32[L.postedSlotWord(g.ring, n) + L.SLOT_SEQ] = L.SLOT_EMPTY;
  // Publishes the header: an attacher that sees the magic sees every field above.
  Atomics.store(i32, L.W_MAGIC, L.SRQ_MAGIC);
}

function bad(msg: string): never {
  throw new RowanError(ErrorCodes.BAD_CONFIG, `receive queue: ${msg}`);
}
