// What the nic actor (the soft RNIC of the tcp fabric, DESIGN §4) takes and sends.
//
// On its rings: liveness only. The nic is on the data path, not the control path: it never talks to
// control or digest, it lands writes in the receive queue control posted (runtime/rowan/srq.ts), the
// way an RNIC consumes receive buffers without the receiver's CPUs.
//
// On the wire: the verbs of frames.ts (HELLO, SEND, WRITE, READ, ALLOC and their replies), one TCP
// connection per sending actor. The endpoint it listens on is reported in its READY and in `rowan status`.
import type { PingRecord, PongRecord } from '../../shm/mailbox.js';

export type NicInbound = PingRecord;
export type NicOutbound = PongRecord;

/** Where a nic listens (READY report and status). */
export interface NicEndpoint {
  host: string;
  port: number;
}

/** A connection whose unexecuted frames exceed this stops being read until they drain (TCP backpressure). */
export const NIC_QUEUE_BYTES_MAX = 8 * 1024 * 1024;
