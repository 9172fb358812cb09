// Ring records the digest actor takes and sends (§4.4).
import type { PingRecord, PongRecord, SegmentBatchRecord } from '../../shm/mailbox.js';

/** From control: used b-log segments to digest, in order. */
export type DigestInbound = PingRecord | SegmentBatchRecord;
/** To clean: committed segments. */
export type DigestOutbound = PongRecord | SegmentBatchRecord;
