// The files of a node's data dir, named once (DESIGN §3, §4): every layer that opens one takes its
// name from here.
import { join } from 'node:path';

/** The PM pool (superblock, segment meta table, segments): native/pmem2.ts maps it. */
export const POOL_FILE = 'pool.pm';
/** The Rowan receive queue the control actor posts b-log buffers in (runtime/rowan/srq.ts). */
export const SRQ_FILE = 'rowan.srq';
/** The node's control socket (runtime/endpoint.ts). */
export const CONTROL_SOCKET_FILE = 'rowan.sock';
/** Which shards this node has received replicated data of, and at which version it was promoted
 *  (actors/shared/trust.ts): what a cold start may apply from the b-log. */
export const REPLICAS_FILE = 'replicas.json';
/** Per shard, the version under which a backup has dropped tombstones (actors/shared/floors.ts): b-log
 *  blocks at or below it found in a segment digest never finished are late, and refused by a cold start. */
export const FLOORS_FILE = 'tombstone-floors.json';
/** Per shard, the version high-water mark every version this node hands out or tells another node
 *  stays under (actors/shared/version-marks.ts): a cold start resumes the shard's counter above it. */
export const VERSION_MARKS_FILE = 'version-marks.json';
/** Per shard, the last CommitVer this node computed as the shard's primary, saved now and then
 *  (actors/shared/commit-points.ts): a restarted primary's unfinished writes lie above it. */
export const COMMIT_POINTS_FILE = 'commit-points.json';
/** The writes that failed after their t-log append (actors/shared/failed-writes.ts): a cold start
 *  does not index them. */
export const FAILED_WRITES_FILE = 'failed-writes.log';

export interface DataDirFiles {
  pool: string;
  srq: string;
  socket: string;
  replicas: string;
  floors: string;
  marks: string;
  commitPoints: string;
  failedWrites: string;
}

export function dataDirFiles(dataDir: string): DataDirFiles {
  return { pool: join(dataDir, POOL_FILE), srq: join(dataDir, SRQ_FILE), socket: join(dataDir, CONTROL_SOCKET_FILE), replicas: join(dataDir, REPLICAS_FILE), floors: join(dataDir, FLOORS_FILE), marks: join(dataDir, VERSION_MARKS_FILE), commitPoints: join(dataDir, COMMIT_POINTS_FILE), failedWrites: join(dataDir, FAILED_WRITES_FILE) };
}
