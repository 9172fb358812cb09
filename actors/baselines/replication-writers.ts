// The replication writers of the evaluation (ROWAN §6.1, DESIGN §4 "Baseline replication modes"), all
// on top of one RowanConnection so they run over any fabric and differ only in where writes land:
//
//   rowan   conn.write: the receiver's MP-SRQ picks the address, so every sender's writes merge into
//           the one b-log in arrival order -> one PM write stream per receiver.
//   rwrite  FaRM style (RWrite-KV): each stream owns a log at the receiver (a chain of regions from
//           allocateRegion) and appends with one-sided writeAt at its own tail -> one PM write stream
//           per sender stream.
//   share   Share-KV: the streams of one sending node share one remote log; addresses come from a
//           local atomic counter (baselines/share.ts) -> contiguous addresses, one PM write stream per
//           sending node, but writes land in whatever order the senders reach the receiver.
//   batch   Batch-KV: rwrite plus sender-side batching, flushed at 256 B or after 5 µs
//           (baselines/batch.ts says exactly what the timeout means in JS).
//   tailwind Tailwind: rwrite's one log per sender stream, each write followed by the buffer's running
//           checksum in the same WRITE, buffers opened and closed with their log's id
//           (baselines/tailwind.ts), recovered by Algorithm 1 (shm/tailwind-log.ts).
//   erda    Erda: rwrite's log per stream plus an 8-byte atomic index entry per key (newest and
//           previous object offsets) written one-sidedly before each object (baselines/erda.ts).
//   asymnvm AsymNVM: rwrite's log per stream, one checksummed op-log record per operation (shm/op-log.ts,
//           baselines/asymnvm.ts), acknowledged in log order.
//
// A stream does not own its connection: several streams of one thread share a connection, as worker
// coroutines share a QP; close the connection yourself after closing the streams.
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { AsymNvmStream } from './asymnvm.js';
import { BatchStream } from './batch.js';
import { ErdaStream } from './erda.js';
import { RegionLog } from './region-log.js';
import { ShareStream, type SharedLog } from './share.js';
import { TailwindStream } from './tailwind.js';
import {
  REPLICATION_MODES,
  emptyStreamStats,
  type ReplicationMode,
  type ReplicationStream,
  type ReplicationStreamOptions,
  type ReplicationStreamStats,
} from './types.js';
import type { RowanConnection } from '../../runtime/fabric/fabric.js';

export * from './types.js';
export { SharedLog } from './share.js';

/** Open one write stream of `mode` on `conn`. */
/** What opening a stream takes: the stream options, and for share the node's shared log state
 *  (SharedLog.create in one thread, SharedLog.attach in others). */
export interface OpenStreamOptions extends ReplicationStreamOptions {
  sharedLog?: SharedLog;
  /** tailwind: the sending worker, named in its buffers' heads with the node (the owner id). */
  worker?: number;
}

export function openReplicationStream(mode: ReplicationMode, conn: RowanConnection, o: OpenStreamOptions): ReplicationStream {
  switch (mode) {
    case 'rowan':
      return new RowanStream(conn);
    case 'rwrite':
      return new RWriteStream(new RegionLog(conn, o));
    case 'batch':
      return new BatchStream(new RegionLog(conn, o), o);
    case 'asymnvm':
      return new AsymNvmStream(new RegionLog(conn, o));
    case 'share':
      if (!o.sharedLog) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'share mode needs the sending node\'s sharedLog');
      return new ShareStream(conn, o.sharedLog, o);
    case 'tailwind':
      return new TailwindStream(conn, { ...o, node: o.ownerId, worker: o.worker ?? 0 });
    case 'erda':
      return new ErdaStream(conn, o);
    default:
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `unknown replication mode '${String(mode)}' (${REPLICATION_MODES.join('|')})`);
  }
}

/** Rowan: the receiver decides the address; the stream just forwards. */
class RowanStream implements ReplicationStream {
  readonly mode = 'rowan' as const;
  readonly logId = 'blog';
  private readonly s = emptyStreamStats();
  constructor(private readonly conn: RowanConnection) {}

  async prepare(): Promise<void> {}

  write(bytes: Uint8Array): Promise<number> {
    // No async frame of its own: the connection's promise plus one reaction per write.
    return this.conn.write(bytes).then((at) => {
      this.s.writes++;
      this.s.bytes += bytes.length;
      return at;
    });
  }

  stats(): ReplicationStreamStats {
    return { ...this.s };
  }

  async close(): Promise<void> {}
}

/** rwrite: append at this stream's own remote log tail. */
class RWriteStream implements ReplicationStream {
  readonly mode = 'rwrite' as const;
  readonly logId: string;
  constructor(private readonly log: RegionLog) {
    this.logId = log.traceId;
  }

  prepare(): Promise<void> {
    return this.log.prepare();
  }

  write(bytes: Uint8Array): Promise<number> {
    return this.log.append(bytes);
  }

  stats(): ReplicationStreamStats {
    return { ...emptyStreamStats(), ...this.log.stats() };
  }

  close(): Promise<void> {
    return this.log.close();
  }
}
