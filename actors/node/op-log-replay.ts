// The AsymNVM back end's replay (cluster replication mode `asymnvm`, ../baselines/asymnvm.ts): a region
// of role Remote that starts with an op-log record (shm/op-log.ts) is read record by record -- never by
// the b-log's hole-skipping scan -- and each record's blocks are handed to the applier (an index
// update per entry, highest version wins, a transaction's entries only once all are present). The
// region's replay stops at the first record that is absent, torn (its checksum does not verify: the
// front end died mid-write) or out of sequence; nothing from there on is applied. The front end
// acknowledges a record only once every earlier record of its log is persistent, so what is not
// applied was never acknowledged.
import type { Limits } from '../../config/limits.js';
import { readBlock, type Block } from '../../shm/log.js';
import { OP_LOG_MAGIC, scanOpLog, type OpLogScan } from '../../shm/op-log.js';

export interface OpLogReplayStats {
  /** Regions replayed as op logs. */
  regions: number;
  records: number;
  /** Regions whose replay stopped at a torn or out-of-sequence record. */
  tornRegions: number;
}

export function newOpLogReplayStats(): OpLogReplayStats {
  return { regions: 0, records: 0, tornRegions: 0 };
}

/** The replay in words, for the cold-start log. */
export function opLogReplayLine(s: OpLogReplayStats): string {
  return `replayed ${s.records} op-log record(s) from ${s.regions} region(s), ${s.tornRegions} region(s) ended at a torn record (not applied)`;
}

/** Whether the region at `start` holds an op log (its first bytes are a record's magic). A region of
 *  log blocks cannot be taken for one: a block starts with its entry type (1-4), the magic with 0x41. */
export function isOpLogRegion(bytes: Uint8Array, start: number): boolean {
  return new DataView(bytes.buffer, bytes.byteOffset + start, 4).getUint32(0, true) === OP_LOG_MAGIC;
}

/** Apply the intact records of the op-log region [start, end) in order (see the header); returns the scan. */
export function replayOpLogRegion(bytes: Uint8Array, start: number, end: number, limits: Limits, apply: (b: Block) => void, s: OpLogReplayStats): OpLogScan {
  const scan = scanOpLog(bytes, start, end);
  for (const r of scan.records) {
    let at = r.payloadStart;
    for (let i = 0; i < r.blocks && at < r.payloadEnd; i++) {
      const b = readBlock(bytes, at, r.payloadEnd, limits);
      if (b === null) break; // the record verified, so its blocks were written whole: not reached
      apply(b);
      at += b.size;
    }
  }
  s.regions++;
  s.records += scan.records.length;
  if (scan.stop !== 'end') s.tornRegions++;
  return scan;
}
