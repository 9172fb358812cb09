// The one table of id ranges and of the limits that several modules must agree on (CONVENTIONS 8).
// Relations between them are asserted when this module loads, so a change that breaks one fails at
// start, not in production.
//
// Segment owner ids (the 10-bit owner field of a segment's meta word, shm/pool-layout.ts) are
// per owner role; within one role the ranges below never overlap:
//
//   role     owner ids                      what
//   Worker   [0, ACTORS)                    t-log of worker w                     tlogOwner(w)
//   Worker   [BACKUP_LOG_BASE, +ACTORS)     RPC-KV backup log of worker w         backupLogOwner(w)
//   Control  [0, ACTORS)                    b-log segments of control actor c     blogOwner(c)
//   Digest   [0, ACTORS)                    digest log of digest actor d          actorOwner(d)
//            MIGRATION_LOG_OWNER             the migration actor's log of copied entries (§4.6) and
//                                           its read-epoch slot among the digest ones
//            PROMOTION_ACTOR_ID              the node main thread's promotion log (§4.5 phase 2):
//                                           reassembled entries and scattered ones (actors/shared/gather-scatter.ts)
//                                           (also its read-epoch slot among the digest ones)
//   Digest   RECOVERY_LOG_OWNER             cold start's log of reassembled multi-block entries
//   Clean    [0, ACTORS)                    clean log of clean actor k            actorOwner(k)
//   Migration[0, ACTORS)                    migration actor m                     actorOwner(m)
//   Remote   [0, NODE_ID_MAX]               regions a remote node writes one-sidedly (baselines
//                                           rwrite/batch/share): one owner id per sending node
//                                                                                 remoteRegionOwner(n)
//
// ACTORS = ACTORS_PER_ROLE_MAX. Node ids span the whole owner field, so a remote node's regions can
// be named by its id alone for every node id the configuration accepts.

/** Bits of a segment's owner id (shm/pool-layout.ts META_OWNER_BITS). */
export const OWNER_ID_BITS = 10;
export const OWNER_ID_MAX = (1 << OWNER_ID_BITS) - 1;

/** Node ids the cluster configuration accepts: [0, NODE_ID_MAX]. */
export const NODE_ID_MAX = 1023;

/** Actors of one role per node (config/limits.ts actorsPerRoleMax; the commit tracker's inflight table,
 *  actors/shared/gc-state.ts, has a row per worker). */
export const ACTORS_PER_ROLE_MAX = 64;

/** The digest-role id the node's main thread uses while it promotes shards (§4.5 phase 2): the owner
 *  id of the log it reassembles multi-block entries into, and its read-epoch slot. Digest actors are
 *  numbered from 0, and a node never runs ACTORS_PER_ROLE_MAX of them. */
export const PROMOTION_ACTOR_ID = ACTORS_PER_ROLE_MAX - 1;

/** The digest-role id the migration actor copies shards with (actors/migration/copy.ts): the owner id
 *  of the log it appends copied entries to (recovered at cold start like the promotion log), and its
 *  read-epoch slot. Below PROMOTION_ACTOR_ID, above every digest actor a node runs. */
export const MIGRATION_LOG_OWNER = ACTORS_PER_ROLE_MAX - 2;

/** First owner id of the RPC-KV backup logs (role Worker). */
export const BACKUP_LOG_OWNER_BASE = 512;

/** Cold start's own digest-role log (actors/node/recovery.ts): clear of the digest actors' ids. */
export const RECOVERY_LOG_OWNER = OWNER_ID_MAX;

/** CPUs a cpu_set_t can name (native/libc.ts CPU_SETSIZE): cores are in [0, CPU_ID_MAX]. */
export const CPU_ID_MAX = 1023;

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`config/base/ids.ts: ${what}`);
}

function actorId(id: number, what: string): number {
  check(Number.isInteger(id) && id >= 0 && id < ACTORS_PER_ROLE_MAX, `${what} ${id} is outside [0, ${ACTORS_PER_ROLE_MAX})`);
  return id;
}

export function tlogOwner(workerId: number): number {
  return actorId(workerId, 'worker id');
}

export function backupLogOwner(workerId: number): number {
  return BACKUP_LOG_OWNER_BASE + actorId(workerId, 'worker id');
}

export function blogOwner(controlId: number): number {
  return actorId(controlId, 'control actor id');
}

/** Digest, clean and migration logs: the actor's id. */
export function actorOwner(actorIdOfRole: number): number {
  return actorId(actorIdOfRole, 'actor id');
}

export function remoteRegionOwner(senderNodeId: number): number {
  check(Number.isInteger(senderNodeId) && senderNodeId >= 0 && senderNodeId <= NODE_ID_MAX, `node id ${senderNodeId} is outside [0, ${NODE_ID_MAX}]`);
  return senderNodeId;
}

// ---- relations, asserted at load ------------------------------------------------------------------
check(ACTORS_PER_ROLE_MAX <= BACKUP_LOG_OWNER_BASE, 't-log owner ids must stay below the backup logs');
check(BACKUP_LOG_OWNER_BASE + ACTORS_PER_ROLE_MAX - 1 <= OWNER_ID_MAX, 'backup log owner ids must fit the owner field');
check(NODE_ID_MAX <= OWNER_ID_MAX, 'every node id must name its remote regions in the owner field');
check(ACTORS_PER_ROLE_MAX - 1 < RECOVERY_LOG_OWNER, 'the recovery log must not share a digest actor\'s owner id');
