// Ring records the worker actor takes and sends. Today: liveness only. Later (§4.1, §4.4): workers
// replicate through the Rowan fabric, not these rings, and take shard/term updates from control.
import type { PingRecord, PongRecord } from '../../shm/mailbox.js';

/** Accepted on the worker's rings (PING is answered by the runtime). */
export type WorkerInbound = PingRecord;
/** Sent on the worker's rings. */
export type WorkerOutbound = PongRecord;
