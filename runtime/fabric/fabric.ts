// One interface, three transports (DESIGN §4): `shm` (same host: the sender's thread plays the
// receiver's RNIC on shared memory), `tcp` (a soft RNIC actor per node executes the verbs on local
// memory), `verbs` (libibverbs). Workers hold one RowanConnection per remote receiver, as a worker
// thread holds one RC QP per remote control thread in the paper (§5.2).

import type { FabricKind } from '../../config/base/fabric-kinds.js';
import { defaultTimings } from '../../config/timings.js';
export { FABRIC_KINDS, type FabricKind } from '../../config/base/fabric-kinds.js';

export interface SenderStats {
  /** Writes acknowledged (persistent at the receiver). */
  writes: number;
  bytes: number;
  /** Writes re-issued because they took longer than the retry bound. */
  retries: number;
  /** Times a write found no posted buffer and waited for the receiver to post. */
  noBufferWaits: number;
}

/** A segment of the receiver's pool handed to a sender for one-sided writes (baselines, migration). */
export interface RemoteRegion {
  segment: number;
  offset: number;
  length: number;
}

/** The sender's end of one Rowan instance (plus one-sided verbs on the receiver's pool). */
export interface RowanConnection {
  readonly kind: FabricKind;
  /**
   * Rowan write: land `bytes` (whole 64 B strides, at most one buffer) in the receiver's b-log.
   * Resolves once it is persistent there, with the pool offset it landed at; -1 under `verbs`, where a
   * SEND completion does not say where the receiver's RNIC put the data (LANDED_ADDRESS_UNKNOWN).
   */
  write(bytes: Uint8Array): Promise<number>;
  /** One-sided WRITE + persist at a pool offset inside a region this sender was given. */
  writeAt(offset: number, bytes: Uint8Array): Promise<void>;
  /** One-sided READ from the receiver's pool. */
  read(offset: number, length: number): Promise<Uint8Array>;
  /** Ask the receiver for a free segment to write one-sidedly into (rwrite/share/batch logs). */
  allocateRegion(ownerId: number): Promise<RemoteRegion>;
  stats(): SenderStats;
  close(): Promise<void>;
}

export interface RowanSenderOptions {
  /** Re-issue a write that takes longer than this (paper: 1 ms). */
  retryMs: number;
  /** Give up on a write that found no posted buffer for this long (ROWAN_ERR_WRITE_TIMEOUT). */
  noBufferTimeoutMs: number;
  /** Sender id recorded in completion entries. */
  senderId: number;
}

export const defaultSenderOptions: Readonly<RowanSenderOptions> = Object.freeze({
  retryMs: 1,
  noBufferTimeoutMs: defaultTimings.noBufferTimeoutMs,
  senderId: 0,
});
