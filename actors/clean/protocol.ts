// Ring records the clean actor takes and sends (§4.4).
import type { PingRecord, PongRecord, SegmentBatchRecord } from '../../shm/mailbox.js';

/** From digest: committed segments, candidates for garbage collection. */
export type CleanInbound = PingRecord | SegmentBatchRecord;
export type CleanOutbound = PongRecord;
