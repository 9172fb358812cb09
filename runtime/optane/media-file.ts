// Where a pool's media model keeps its state: `<pool file>.optane`, a small file beside the pool. The
// node creates it at start when `pm.media` is optane (and removes it when none); every thread and
// process that opens the pool afterwards -- the node's actors, a same-host peer landing writes over the
// shm fabric -- finds it and feeds the same model (one set of DIMMs). Its words are a Float64Array in
// ./xpbuffer.ts's layout, with the parameters in the header, so openers need no configuration of their
// own. The state is a model, not data: nothing persists it, and it starts empty at every node start.
import { closeSync, existsSync, fstatSync, ftruncateSync, openSync, rmSync } from 'node:fs';
import type { PoolRegion } from '../../config/base/region.js';
import { mapFd, type FileMapping } from '../../native/mapping.js';
import { optaneParams, stateWords, Hdr, type XPBufferParams } from './xpbuffer.js';
import { OptaneMedia, initState, optaneTiming, paramsOf, snapshotOf, type MediaSnapshot } from './media.js';
import { optaneRegion } from './region.js';

export const MEDIA_STATE_SUFFIX = '.optane';

/** What `pm.*` configures (config/schema.ts); the rest is the calibrated model's (./xpbuffer.ts). */
export interface MediaConfig {
  dimms: number;
  dimmWriteMBps: number;
}

/** A pool's media model, mapped. close() unmaps its state. */
export interface MappedMedia {
  media: OptaneMedia;
  close(): void;
}

/** The state file's size: its words, in whole pages (libpmem2 maps page multiples). */
function fileBytes(params: XPBufferParams): number {
  return Math.ceil((stateWords(params) * 8) / PAGE_BYTES) * PAGE_BYTES;
}
const PAGE_BYTES = 4096;

function mapState(path: string, fd: number, bytes: number): { state: Float64Array; mapping: FileMapping } {
  const mapping = mapFd(fd, { mode: 'pagecache', length: bytes, label: path });
  const b = mapping.bytes;
  return { state: new Float64Array(b.buffer, b.byteOffset, bytes / 8), mapping };
}

/** Create (or reset) the model of the pool at `poolPath`: empty buffers, zero counts, enabled. */
export function createPoolMedia(poolPath: string, c: Partial<MediaConfig> = {}): MappedMedia {
  const params = { ...optaneParams, dimms: c.dimms ?? optaneParams.dimms };
  const timing = { ...optaneTiming, dimmWriteMBps: c.dimmWriteMBps ?? optaneTiming.dimmWriteMBps };
  const path = poolPath + MEDIA_STATE_SUFFIX;
  const bytes = fileBytes(params);
  const fd = openSync(path, 'w+');
  try {
    ftruncateSync(fd, bytes);
    const { state, mapping } = mapState(path, fd, bytes);
    initState(state, params, timing);
    return { media: new OptaneMedia(state), close: () => mapping.close() };
  } finally {
    closeSync(fd);
  }
}

/** The pool's model if its node made one (createPoolMedia), else null. */
export function attachPoolMedia(poolPath: string): MappedMedia | null {
  const path = poolPath + MEDIA_STATE_SUFFIX;
  let fd: number;
  try {
    fd = openSync(path, 'r+');
  } catch {
    return null;
  }
  try {
    const bytes = fstatSync(fd).size;
    if (bytes < PAGE_BYTES) return null;
    const head = mapState(path, fd, PAGE_BYTES);
    const dimms = head.state[Hdr.DIMMS]!;
    const want = dimms > 0 ? fileBytes(paramsOf(head.state).params) : -1;
    head.mapping.close();
    if (want !== bytes) return null; // being created, or not a state of this layout
    const { state, mapping } = mapState(path, fd, bytes);
    return { media: new OptaneMedia(state), close: () => mapping.close() };
  } finally {
    closeSync(fd);
  }
}

export function removePoolMedia(poolPath: string): void {
  rmSync(poolPath + MEDIA_STATE_SUFFIX, { force: true });
}

/** The counters of the pool's model, or null when it has none. */
export function readPoolMedia(poolPath: string): MediaSnapshot | null {
  const m = attachPoolMedia(poolPath);
  if (!m) return null;
  try {
    return snapshotOf(m.media.state);
  } finally {
    m.close();
  }
}

/** Pool.open's region hook: the region pays the media model's time when the pool has one. */
export function withPoolMedia(region: PoolRegion, poolPath: string): PoolRegion {
  const m = existsSync(poolPath + MEDIA_STATE_SUFFIX) ? attachPoolMedia(poolPath) : null;
  return m ? optaneRegion(region, m.media, () => m.close()) : region;
}
