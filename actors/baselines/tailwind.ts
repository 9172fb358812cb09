// Tailwind (ATC '18): backup-passive replication. The primary's worker opens a buffer at the backup,
// then replicates every entry with ONE one-sided WRITE into it -- the entry's blocks followed by the
// buffer's running checksum (shm/tailwind-log.ts) -- and closes the buffer when the next record would
// not fit. No backup thread touches the data path, and none looks at the buffers until recovery: the
// recovery scan (Algorithm 1) runs at a failover's promotion (actors/node/promote.ts) and at a cold
// start (actors/node/recovery.ts).
//
// Open and close, the paper's two RPCs (§3.3.1), map onto the fabric like this:
//   open   allocateRegion: a request the backup serves (over tcp its NIC actor grants a zeroed segment
//          of role Remote owned by this node -- the registration, actors/nic/nic-verbs.ts; over shm the
//          sender plays the NIC and takes it in the backup's meta table), then the buffer head with the
//          log's id (node, worker, buffer sequence) written one-sidedly;
//   close  once every write into the buffer is acknowledged, its head is rewritten with the records'
//          bytes and the last checksum (§3.3.2's close metadata), one-sidedly as well.
// So open and close are not RPCs served by the backup's worker as in the paper: close's metadata lands
// by a one-sided WRITE, which the recovery scan does not need (an open buffer is scanned the same way).
//
// Records are reserved in address order synchronously, and their checksums chained in that order, so
// concurrent writes of one worker still form one chain; a record is acknowledged once its WRITE is
// persistent at the backup. A write that fails leaves a hole the scan stops at, so no record after it
// in that buffer is acknowledged (a later one that landed is refused: the fabrics land one connection's
// writes in order, so an earlier write has failed or landed by the time a later one lands), and the
// next write opens a new buffer -- the paper's rule (§3.4.2: "an unsuccessful RDMA write halts
// replication to the buffer").
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { defaultLimits } from '../../config/limits.js';
import { TW_CHECKSUM_BYTES, TW_HEAD_BYTES, chainEntry, chainStart, encodeHead, putChecksumBlock, storedChecksum } from '../../shm/tailwind-log.js';
import type { RemoteRegion, RowanConnection } from '../../runtime/fabric/fabric.js';
import { emptyStreamStats, type ReplicationStream, type ReplicationStreamOptions, type ReplicationStreamStats } from './types.js';

interface Buffer {
  region: RemoteRegion;
  seq: number;
  tail: number;
  running: number;
  /** The last checksum written (0 before the first record). */
  last: number;
  inflight: number;
  left: boolean;
  /** The offset of the first record whose WRITE failed (a hole), or -1. */
  failedAt: number;
}

export interface TailwindOptions extends ReplicationStreamOptions {
  /** The log's name in the buffer heads: the sending node's id and its worker (the primary's t-log). */
  node: number;
  worker: number;
}

export class TailwindStream implements ReplicationStream {
  readonly mode = 'tailwind' as const;
  readonly logId: string;
  private cur: Buffer | null = null;
  private growing: Promise<Buffer> | null = null;
  private seq = 0;
  private closed = false;
  private inflight = 0;
  private drained: (() => void) | null = null;
  private readonly s = emptyStreamStats();

  constructor(
    private readonly conn: RowanConnection,
    private readonly o: TailwindOptions,
  ) {
    this.logId = o.traceId ?? `tailwind:${o.node}.${o.worker}`;
  }

  prepare(): Promise<void> {
    return this.cur === null ? this.advance(0).then(() => undefined) : Promise.resolve();
  }

  async write(bytes: Uint8Array): Promise<number> {
    if (this.closed) throw new RowanError(ErrorCodes.RECEIVER_CLOSED, `tailwind log ${this.logId} is closed`);
    const len = bytes.length + TW_CHECKSUM_BYTES;
    let cur = this.cur;
    while (cur === null || cur.tail + len > cur.region.length) cur = await this.advance(len);
    const at = cur.region.offset + cur.tail;
    cur.tail += len;
    cur.running = chainEntry(cur.running, bytes, defaultLimits);
    cur.last = storedChecksum(cur.running);
    const record = new Uint8Array(len);
    record.set(bytes, 0);
    putChecksumBlock(record, bytes.length, cur.running);
    cur.inflight++;
    this.inflight++;
    try {
      await this.conn.writeAt(at, record);
    } catch (err) {
      if (cur.failedAt < 0 || at < cur.failedAt) cur.failedAt = at;
      if (this.cur === cur) this.cur = null;
      throw err;
    } finally {
      await this.release(cur);
    }
    if (cur.failedAt >= 0 && cur.failedAt < at) {
      throw new RowanError(ErrorCodes.PEER_GONE, `tailwind log ${this.logId}: a write before this one failed, so the recovery scan stops before it`);
    }
    this.s.writes++;
    this.s.bytes += bytes.length;
    return at;
  }

  stats(): ReplicationStreamStats {
    return { ...this.s };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.growing) await this.growing.catch(() => undefined);
    if (this.inflight > 0) await new Promise<void>((r) => (this.drained = r));
    const cur = this.cur;
    this.cur = null;
    if (cur) await this.closeBuffer(cur).catch(() => undefined);
  }

  private advance(len: number): Promise<Buffer> {
    if (this.growing === null) this.growing = this.open(len).finally(() => (this.growing = null));
    return this.growing;
  }

  /** open: a granted region, its head written before any record. */
  private async open(len: number): Promise<Buffer> {
    const region = await this.conn.allocateRegion(this.o.ownerId);
    if (TW_HEAD_BYTES + len > region.length) {
      throw new RowanError(ErrorCodes.ENTRY_TOO_LARGE, `a ${len} B tailwind record cannot fit a ${region.length} B buffer`);
    }
    this.s.regions++;
    const seq = this.seq++;
    await this.conn.writeAt(region.offset, encodeHead({ node: this.o.node, worker: this.o.worker, seq }));
    const fresh: Buffer = { region, seq, tail: TW_HEAD_BYTES, running: chainStart(), last: 0, inflight: 0, left: false, failedAt: -1 };
    const old = this.cur;
    this.cur = fresh;
    if (old) {
      old.left = true;
      if (old.inflight === 0) await this.closeBuffer(old);
    }
    return fresh;
  }

  /** close: the head rewritten with the records' bytes and the last checksum. */
  private async closeBuffer(b: Buffer): Promise<void> {
    if (b.failedAt >= 0) return; // its head stays open: the scan finds where its records end
    const head = encodeHead({ node: this.o.node, worker: this.o.worker, seq: b.seq }, { bytes: b.tail - TW_HEAD_BYTES, checksum: b.last });
    await this.conn.writeAt(b.region.offset, head);
    this.o.onRegionRetired?.(b.region);
  }

  private async release(b: Buffer): Promise<void> {
    b.inflight--;
    if (--this.inflight === 0 && this.drained) {
      this.drained();
      this.drained = null;
    }
    if (b.left && b.inflight === 0) await this.closeBuffer(b).catch(() => undefined);
  }
}
