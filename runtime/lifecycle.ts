// The declared messages between the node's main thread and an actor's worker_thread (CONVENTIONS 2):
// one startup message carrying everything the actor may touch (its config, its shared buffers), one
// READY reply, a stop request, and the failure report. Data never travels here: it goes through rings.
import type { RowanConfig } from '../config/model.js';
import type { RingHandle } from '../shm/ring.js';
import type { ErrorRecord } from '../config/base/errors.js';
import type { VerbsDevices } from './fabric/verbs-devices.js';

export interface InboundSpec {
  from: string;
  ring: RingHandle;
}

export interface OutboundSpec {
  to: string;
  /** The receiving actor's role ('main' for the supervisor). */
  toRole: string;
  ring: RingHandle;
  /** The receiver's doorbell, rung after each publish. */
  doorbell: SharedArrayBuffer;
}

export interface StartMessage {
  type: 'start';
  role: string;
  id: number;
  /** `${role}.${id}`, unique in the node. */
  name: string;
  /** CPUs to pin the thread to. */
  cores: number[];
  /** The thread's name when actors share it (./placement.ts BACKGROUND_THREAD); absent = `name`. */
  thread?: string;
  config: RowanConfig;
  counters: SharedArrayBuffer;
  /** This actor's own doorbell (all its inbound rings ring it). */
  doorbell: SharedArrayBuffer;
  inbound: InboundSpec[];
  outbound: OutboundSpec[];
  /** The application's payload for this actor (structured-cloneable; SharedArrayBuffers are shared).
   *  The runtime carries it and never looks inside: ROWAN-KV puts its cluster and shared indexes here. */
  app?: unknown;
  /** The cluster secret (docs/security.md): what the nic, the client ports and the Redis ports
   *  ask peers to prove, and what this actor proves to other nodes. null = rowan start --no-auth. */
  secret: Uint8Array | null;
  /** The client password clients prove on the client and Redis ports; null = none (--no-auth).
   *  Absent (an older caller) = null. */
  clientPassword?: Uint8Array | null;
  /** Where the verbs fabric finds devices (./fabric/verbs-devices.ts); absent = libibverbs. */
  verbsDevices?: VerbsDevices;
}

export interface StopMessage {
  type: 'stop';
}

export type ParentToActor = StartMessage | StopMessage;

/** The workerData of an actor thread (./actor-host.ts). */
export interface HostData {
  /** file: URLs of the role modules (thread.ts, compiled) this thread runs actors of. */
  entries: string[];
  /** How many HostStart messages to expect. */
  actors: number;
}

/** To ./actor-host.ts: start the actor of module `entry` with `start`, its lifecycle on `port`. */
export interface HostStart {
  type: 'host-start';
  entry: string;
  start: StartMessage;
  port: import('node:worker_threads').MessagePort;
}

/** What READY reports: facts read back inside the thread, not what was asked for. */
export interface ReadyReport {
  tid: number;
  /** sched_getaffinity(0) inside the thread after pinning. */
  cpus: number[];
  /** sched_getcpu() at READY. */
  cpu: number;
  /** Where the actor listens, if it serves a TCP port (the nic; port 0 in the config is resolved here). */
  endpoint?: { host: string; port: number };
}

/** What a role's init() may return to be reported in READY. */
export interface ReadyExtras {
  endpoint?: { host: string; port: number };
}

export type ActorToParent =
  | ({ type: 'ready' } & ReadyReport)
  | { type: 'failed'; error: ErrorRecord }
  | { type: 'stopped' };
