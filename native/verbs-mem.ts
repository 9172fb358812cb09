// Native memory for the verbs transport: buffers with a stable address that an MR can cover and a
// work request's sge can point at (a JS ArrayBuffer has neither guarantee). The sender stages every
// entry in one of these before it SENDs it (paper §5.2: the SEND's data must stay put until the
// READ behind it completes), and the 1-byte persistence READ lands in one.
//
// Lives in native/ because only native/ may allocate through koffi (CONVENTIONS 5).

import koffi from 'koffi';
import { ErrorCodes, RowanError, invariant } from '../config/base/errors.js';

/** Page alignment: what ibv_reg_mr pins anyway, and what keeps entries off shared cache lines. */
export const NATIVE_BUFFER_ALIGN_BYTES = 4096;

export class NativeBuffer {
  /** The first byte, aligned to NATIVE_BUFFER_ALIGN_BYTES. */
  readonly address: bigint;
  readonly size: number;
  /** A JS view of the same memory: writes through it are what the RNIC DMA-reads. */
  readonly bytes: Uint8Array;
  private raw: bigint;

  private constructor(raw: bigint, address: bigint, size: number) {
    this.raw = raw;
    this.address = address;
    this.size = size;
    this.bytes = new Uint8Array(koffi.view(address, size));
  }

  /** `size` zeroed bytes of native memory that stay at one address until free(). */
  static alloc(size: number): NativeBuffer {
    if (!Number.isInteger(size) || size <= 0 || size > 2 ** 31) {
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `native buffer size ${size} must be in [1, 2^31]`);
    }
    const align = NATIVE_BUFFER_ALIGN_BYTES;
    const raw = koffi.alloc('uint8_t', size + align) as bigint;
    const a = BigInt(align);
    const address = ((raw + a - 1n) / a) * a;
    const b = new NativeBuffer(raw, address, size);
    b.bytes.fill(0);
    return b;
  }

  /** The address of byte `offset` (for an sge). */
  at(offset: number): bigint {
    invariant(offset >= 0 && offset <= this.size, `native buffer offset ${offset} outside [0, ${this.size}]`);
    return this.address + BigInt(offset);
  }

  get freed(): boolean {
    return this.raw === 0n;
  }

  /** Release the memory. Deregister any MR over it (and destroy QPs that may DMA it) first. */
  free(): void {
    if (this.raw === 0n) return;
    koffi.free(this.raw);
    this.raw = 0n;
  }
}
