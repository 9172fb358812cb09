// The index's view of the log (shm/index.ts EntryReader): it resolves an item's PM address to the
// entry's key and version by reading the pool. Index items are taken from entries verified when they
// were indexed, and log entries are immutable while indexed, so these probes skip the checksum.
import type { Limits } from '../config/limits.js';
import type { EntryReader } from './index.js';
import { keyEqualsAt, versionAt } from './log.js';
import type { PersistentRegion } from '../config/base/region.js';

export class PoolEntryReader implements EntryReader {
  constructor(
    private readonly region: PersistentRegion,
    private readonly limits: Limits,
  ) {}

  keyEquals(addr: number, key: Uint8Array): boolean {
    return keyEqualsAt(this.region.bytes, addr, key, this.limits);
  }

  versionAt(addr: number): number {
    return versionAt(this.region.bytes, addr);
  }
}
