// A byte range whose stores can be made persistent. The PM pool mapping (native/pmem2.ts) is one; a
// plain ArrayBuffer with a no-op persist is another (for tests and for structures that live in DRAM).
// Everything above native/ writes through this interface, so storage can be injected (CONVENTIONS 9).

export interface PersistentRegion {
  /** The whole region. Offsets below are byte offsets into it. */
  readonly bytes: Uint8Array;
  /** Make [offset, offset+length) persistent: flush the covering cache lines and fence (or msync). */
  persist(offset: number, length: number): void;
  /** Flush without the fence; call drain() once after several flushes. */
  flush(offset: number, length: number): void;
  /** The fence that completes earlier flushes. */
  drain(): void;
}

/**
 * A region a Pool lives in: a PersistentRegion that can be closed and says how it persists. The PM
 * mapping (native/pmem2.ts PmemMapping) is one; the simulator's regions (test/sim/) are others.
 */
export interface PoolRegion extends PersistentRegion {
  readonly mode: 'dax' | 'msync' | 'pagecache' | 'memory';
  readonly size: number;
  /** Where the mapping starts in this process (to register it with an RNIC); absent for DRAM regions. */
  readonly address?: bigint;
  /** What maps a file region: libpmem2, or libc alone (native/mapping.ts); absent for DRAM regions. */
  readonly backend?: 'libpmem2' | 'libc';
  close(): void;
}

/** A DRAM region: persist is a no-op. Used by unit tests and by anything that only needs the shape. */
export class MemoryRegion implements PersistentRegion {
  readonly bytes: Uint8Array;
  persistCalls = 0;
  constructor(size: number, shared = false) {
    const buf = shared ? new SharedArrayBuffer(size) : new ArrayBuffer(size);
    this.bytes = new Uint8Array(buf);
  }
  persist(): void {
    this.persistCalls++;
  }
  flush(): void {}
  drain(): void {}
}
