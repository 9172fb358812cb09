// Erda (Erda: Efficient Remote Data Atomicity; DESIGN §8) as a writer stream: objects go one-sidedly
// into a log at the receiver with the CRC every log block carries (shm/log-layout.ts: CRC32C over the
// block, keyed with the cluster seed), and each object's key gets an 8-byte atomic index entry holding
// the newest and the previous object's offsets (erda-layout.ts, erda-index.ts).
//
// One write, in Erda's order (§3.3, §4.2): reserve the object's place at the log tail, publish the index
// entry (new tag flipped, the new offset in, the newest so far kept as the old version), then write the
// object; the write is acknowledged once the object is persistent. A writer that dies between the two
// leaves an entry naming a torn or absent object: a reader (erda-reader.ts) finds the checksum wrong
// and returns the previous version. Neither step needs the receiver's CPU.
//
// Blocks that name no key (CommitVer, Flush) are appended without an index entry; of a multi-block
// entry (larger than one MTU block) only block 0 is indexed, and the reader refuses it
// (ROWAN_ERR_ENTRY_TOO_LARGE: the rest of its blocks are not where block 0 is). Not built: the
// paper's log cleaning (regions are never reclaimed while the stream lives) and the server-side repair
// of entries whose newest object is torn (readers fall back each time instead).
import { EntryType } from '../../shm/log.js';
import { KEY_LEN_OFF, SEQ_OFF, TYPE_OFF, HEADER_BYTES } from '../../shm/log-layout.js';
import type { RowanConnection } from '../../runtime/fabric/fabric.js';
import { ErdaIndexWriter } from './erda-index.js';
import { RegionLog } from './region-log.js';
import { emptyStreamStats, type ReplicationStream, type ReplicationStreamOptions, type ReplicationStreamStats } from './types.js';

/** The key of the object `bytes` (one encoded log block) when it is block 0 of a PUT or DEL, else null. */
export function objectKey(bytes: Uint8Array): Uint8Array | null {
  if (bytes.length < HEADER_BYTES) return null;
  const type = bytes[TYPE_OFF];
  if (type !== EntryType.Put && type !== EntryType.Del) return null;
  const dv = new DataView(bytes.buffer, bytes.byteOffset, HEADER_BYTES);
  if (dv.getUint16(SEQ_OFF, true) !== 0) return null;
  const keyLen = dv.getUint16(KEY_LEN_OFF, true);
  return bytes.subarray(HEADER_BYTES, HEADER_BYTES + keyLen);
}

/** What the erda mode cannot do, for the status and the node's start log. */
export const ERDA_NOT_BUILT =
  'replication mode erda: no failover or replica move (backups index its logs only at a cold start), no log cleaning ' +
  '(Erda §4.4 is not built: its object logs and index regions at a backup are freed only when the writing node leaves ' +
  'the configuration, so a long run fills the pool), torn objects are not repaired (readers fall back each time)';

export class ErdaStream implements ReplicationStream {
  readonly mode = 'erda' as const;
  readonly logId: string;
  /** The object log and the index: the fault test's writer uses them to tear an object on purpose. */
  readonly log: RegionLog;
  readonly index: ErdaIndexWriter;

  constructor(conn: RowanConnection, o: ReplicationStreamOptions) {
    this.log = new RegionLog(conn, o);
    this.index = new ErdaIndexWriter(conn, o.ownerId);
    this.logId = this.log.traceId;
  }

  /** The log's first region and the index's first region. */
  async prepare(): Promise<void> {
    await this.log.prepare();
    await this.index.first();
  }

  async write(bytes: Uint8Array): Promise<number> {
    const key = objectKey(bytes);
    if (key === null) return this.log.append(bytes);
    const slot = await this.index.place(key);
    return this.log.append(bytes, (at) => this.index.publish(slot, at));
  }

  stats(): ReplicationStreamStats {
    const l = this.log.stats();
    return { ...emptyStreamStats(), ...l, regions: l.regions + this.index.regionCount };
  }

  close(): Promise<void> {
    return this.log.close();
  }
}
