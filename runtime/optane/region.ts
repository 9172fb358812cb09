// A pool region whose persists pay Optane's media time (`pm.media: optane`, ./media.ts): persist feeds
// the model and waits; flush feeds it (the cache lines leave for the DIMMs) and drain waits for what
// the flushes since the last drain owe. Everything else is the inner region's.
import type { PoolRegion } from '../../config/base/region.js';
import type { OptaneMedia } from './media.js';

export function optaneRegion(inner: PoolRegion, media: OptaneMedia, onClose: () => void): PoolRegion {
  let owed = 0;
  return {
    get bytes() {
      return inner.bytes;
    },
    mode: inner.mode,
    size: inner.size,
    address: inner.address,
    backend: inner.backend,
    persist(offset: number, length: number): void {
      inner.persist(offset, length);
      media.persist(offset, length);
    },
    flush(offset: number, length: number): void {
      inner.flush(offset, length);
      owed = Math.max(owed, media.charge(offset, length));
    },
    drain(): void {
      inner.drain();
      if (owed > 0) media.waitUntil(owed);
      owed = 0;
    },
    close(): void {
      inner.close();
      onClose();
    },
  };
}
