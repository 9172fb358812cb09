// Ring records the control actor takes and sends (§4.3).
import type { PingRecord, PongRecord, SegmentBatchRecord } from '../../shm/mailbox.js';

export type ControlInbound = PingRecord;
/** To digest: batches of used b-log segments, in b-log order. */
export type ControlOutbound = PongRecord | SegmentBatchRecord;
