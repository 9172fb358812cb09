// The seam between the generic node (runtime/node.ts) and the application its actors run. The node
// opens the pool, spawns and supervises actors and answers `status`; what the actors compute, and
// what they need beyond rings, counters, pool, clock and transport, is the application's business.
// ROWAN-KV is one (actors/node/node-application.ts kvApplication).
import type { Logger } from '../config/base/log.js';
import type { Pool } from '../shm/pool.js';
import type { Exposition } from './metrics.js';
import type { ActorStatus } from './status.js';

export interface NodeApplication {
  /** On the node's main thread once the pool is open, before any actor starts (cold start goes here).
   *  A throw fails the node's start. */
  prepare(pool: Pool, log: Logger): void | Promise<void>;
  /** The start-message payload of one actor of `role` (structured-cloneable), or undefined. */
  payload(role: string): unknown;
  /** On the main thread once every actor is READY (ROWAN-KV: the lease with the configuration manager). */
  started?(log: Logger): void;
  /** On the main thread when the node begins to stop, before any actor is stopped. */
  stopping?(): void;
  /** The application's section of the node's status (plain data), from the pool and the actors. */
  status?(pool: Pool, actors: ActorStatus[], uptimeMs: number): unknown;
  /** The application's families for GET /metrics (runtime/metrics.ts), appended to `e`. */
  metrics?(e: Exposition, pool: Pool, actors: ActorStatus[], uptimeMs: number): void;
}
