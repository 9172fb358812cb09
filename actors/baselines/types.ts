// The interface every replication writer implements (actors/baselines/replication-writers.ts picks one by mode).
import type { Clock } from '../../config/base/clock.js';
import type { RemoteRegion } from '../../runtime/fabric/fabric.js';

export type ReplicationMode = 'rowan' | 'rwrite' | 'share' | 'batch'
  | 'tailwind'
  | 'erda'
  | 'asymnvm';
export const REPLICATION_MODES: readonly ReplicationMode[] = ['rowan', 'rwrite', 'share', 'batch',
  'tailwind', 'erda'];

export interface ReplicationStreamStats {
  /** Writes acknowledged (persistent at the receiver). */
  writes: number;
  bytes: number;
  /** Remote regions this stream allocated for its own or its node's log (0 for rowan). */
  regions: number;
  /** batch: one-sided writes issued, and why each was sent. */
  batches: number;
  sizeFlushes: number;
  deadlineFlushes: number;
}

export interface ReplicationStream {
  readonly mode: ReplicationMode;
  /**
   * The remote log this stream's writes land in: 'blog' for Rowan (the receiver's one b-log),
   * 'stream:<node>.<worker>' (traceId) for rwrite/batch, 'node:<id>' for share. Distinct ids = PM write streams.
   */
  readonly logId: string;
  /**
   * Set up what the first write would otherwise pay for (rwrite/batch: the stream's first region;
   * share: the node log's first region; rowan: nothing). Optional: write() does it on demand.
   */
  prepare(): Promise<void>;
  /** Replicate `bytes`; resolves with the receiver pool offset once the bytes are persistent there. */
  write(bytes: Uint8Array): Promise<number>;
  stats(): ReplicationStreamStats;
  /** Send anything pending, wait for every write, hand this stream's regions back (onRegionRetired). */
  close(): Promise<void>;
}

export interface ReplicationStreamOptions {
  /** Owner id of the regions this stream allocates (role Remote): the sending node's id
   *  (config/base/ids.ts remoteRegionOwner). */
  ownerId: number;
  /** rwrite/batch: the stream's name in PM write traces (RegionLogOptions.traceId). */
  traceId?: string;
  /**
   * A region the log has moved past and whose writes are all acknowledged: the receiver may reclaim
   * it. (share: the region that falls out of the node's slot ring, see baselines/share.ts.)
   */
  onRegionRetired?: (r: RemoteRegion) => void;
  /**
   * rwrite/batch: start the stream's first region this many bytes in (a multiple of 64). A log that
   * has run for a while has its tail anywhere in its segment; starting every log of a benchmark at
   * offset 0 at the same instant would move all of them across DIMM interleave units in lockstep.
   */
  firstRegionSkipBytes?: number;
  /** batch: send once the batch holds at least this many bytes (paper: 256 B, one XPLine). */
  batchBytes?: number;
  /** batch: send a batch this long after its first write (paper: 5 µs). */
  batchTimeoutUs?: number;
  clock?: Clock;
}

export function emptyStreamStats(): ReplicationStreamStats {
  return { writes: 0, bytes: 0, regions: 0, batches: 0, sizeFlushes: 0, deadlineFlushes: 0 };
}

