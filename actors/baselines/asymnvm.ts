// AsymNVM's front-end side (cluster replication mode `asymnvm`; the record format is shm/op-log.ts): each
// operation goes to the back end as ONE one-sided write of one checksummed op-log record, appended at
// this stream's own log tail at the back end (a RegionLog: a chain of regions from allocateRegion, as
// rwrite). A transaction's (or a multi-block entry's) blocks go in one record through writeMany: one
// write, one checksum, applied all or nothing.
//
// Acknowledgements are in log order: a record's promise resolves only once it AND every record
// appended before it on this stream are persistent. Records are written concurrently (several
// operations in flight), so a crash can leave a torn record with complete ones after it; the back end's
// replay stops at the torn one (shm/op-log.ts scanOpLog), and in-order acks make sure everything past
// that point was never acknowledged.
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { encodeOpRecord, OP_LOG_HEADER_BYTES } from '../../shm/op-log.js';
import type { RegionLog } from './region-log.js';
import { emptyStreamStats, type ReplicationStream, type ReplicationStreamStats } from './types.js';

export class AsymNvmStream implements ReplicationStream {
  readonly mode = 'asymnvm' as const;
  readonly logId: string;
  private seq = 0;
  /** Resolves once every record appended so far is persistent (the ack order); rejects after a failure. */
  private landed: Promise<void> = Promise.resolve();
  private readonly s: ReplicationStreamStats = emptyStreamStats();

  constructor(private readonly log: RegionLog) {
    this.logId = log.traceId;
  }

  prepare(): Promise<void> {
    return this.log.prepare();
  }

  /** One operation of one block; resolves with the block's pool offset at the back end. */
  write(bytes: Uint8Array): Promise<number> {
    return this.writeMany([bytes]);
  }

  /** One operation of several blocks under one checksum; resolves with the first block's offset. */
  writeMany(blocks: readonly Uint8Array[]): Promise<number> {
    if (blocks.length === 0 || blocks.some((b) => b.length === 0)) {
      return Promise.reject(new RowanError(ErrorCodes.BAD_ARGUMENT, 'an operation needs at least one non-empty block'));
    }
    const record = encodeOpRecord(blocks, ++this.seq);
    const mine = this.log.append(record);
    mine.catch(() => {}); // reported through `done`
    // A record that failed fails every later one too: a replay stops where it is missing, so nothing
    // after it may be acknowledged (a reconnect opens a fresh stream with fresh regions).
    const done = this.landed.then(() => mine).then((at) => at + OP_LOG_HEADER_BYTES);
    this.landed = done.then(() => undefined);
    this.landed.catch(() => {});
    return done.then((at) => {
      this.s.writes++;
      this.s.bytes += record.length;
      return at;
    });
  }

  stats(): ReplicationStreamStats {
    return { ...emptyStreamStats(), ...this.s, regions: this.log.stats().regions };
  }

  close(): Promise<void> {
    return this.log.close();
  }
}
