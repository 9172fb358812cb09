// What a node trusts of the replicated data in its own pool (docs/security.md), for the cold
// start (../node/recovery.ts) and every applier of b-log blocks (./apply.ts).
//
// The b-log is written by other nodes: anything a peer SENDs lands there. A cold start used to apply
// every verified block of it to whatever shard it named, so one forged block could overwrite a key of
// a shard this node is the primary of (its own acknowledged writes lose to a higher version), or carry
// version 2^48-1 so that every later PUT/DEL of the shard failed. Now:
//
//  1. Versions. A block whose version is above VERSION_TRUST_MAX (half the 48-bit space) is never
//     applied, live or at cold start. A legitimate shard gets there only after 2^47 writes or 2^21
//     failovers of that one shard (each skips PROMOTION_VERSION_GAP = 2^26, ../node/promote.ts); a forged
//     version below the bound still leaves 2^47 versions for the shard's writes, so none can brick it.
//  2. Shards. A node legitimately receives b-log blocks of shard s only while it is a backup of s (a
//     catching-up backup included), or the target of its migration. A primary never Rowan-writes to
//     itself, so a block of s in the b-log of s's primary came either from before this node was
//     promoted to primary of s (§4.5 phase 2: its pre-promotion data may live only there), or from a
//     forger / an old primary that lost its lease. So for a shard this node is primary of, the cold
//     start applies b-log blocks only if this node was ever a backup of s in this pool's life, and only
//     below the version its promotion started from (the new primary skipped PROMOTION_VERSION_GAP past
//     every version seen: anything at or above it landed after the promotion and was never
//     acknowledged -- the old primary's lease had expired). A node that was primary of s from the
//     start applies none of s's b-log blocks. Shards the node holds no replica of are not applied,
//     except by a node the configuration lists dead (rejoining): it serves and counts none of them
//     until each is reconciled with its primary, and it keeps those it was ever a backup of.
//
// "Was ever a backup of s" and "promoted at version P" are facts the configuration does not keep, so
// the node records them (ReplicaRecord, <dataDir>/replicas.json, bound to the pool's id): the backups
// of every configuration it reads at cold start or is pushed, before it acknowledges it, and the
// version each promotion continued from, before the promotion is reported done.
//
//  3. Tenures. A promotion recorded is forgotten once the node is a backup of the shard again (the
//     shard failed over or moved away and back): the primary it backs up then writes above that old
//     promotion's version, and those acknowledged writes must not be refused as "after the promotion".
//     A failover stored while this node was killed before it promoted (a full restart right after the
//     prepare it acknowledged) leaves it primary with no promotion of this tenure recorded: its cold
//     start applies every block of the shard, as a backup's would (the promotion it missed would have
//     applied them too), and the confirmation of the restarted primary (../node/lease-hooks.ts) records
//     the version it continues after. (Nemesis seed 345667674 lost this: the record of a promotion two
//     tenures old refused 2758 blocks, and a hot key read a value 16000 writes old.)
//
// A pool that already held data when the record did not exist yet (an upgrade) is recorded as "backup
// of every shard it holds": it keeps the old behaviour instead of losing pre-promotion data nobody
// recorded.
import { createHash } from 'node:crypto';
import { open, rename } from 'node:fs/promises';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { dataDirFiles } from '../../config/base/files.js';
import { remoteRegionOwner } from '../../config/base/ids.js';
import type { ClusterConfig } from '../../config/cluster.js';

/** Highest version any applier of replicated blocks accepts (see the header, 1). */
export const VERSION_TRUST_MAX = 2 ** 47 - 1;

/** Whether a replicated block's version is in the range any shard can legitimately reach. */
export function plausibleVersion(v: number): boolean {
  // 0 is harmless (it outranks nothing; a COMMITVER before anything committed carries it).
  return Number.isSafeInteger(v) && v >= 0 && v <= VERSION_TRUST_MAX;
}

const RECORD_FORMAT = 1;

interface RecordFile {
  format: number;
  poolId: string;
  /** Shards this node has been a backup of. */
  backup: number[];
  /** Shard -> the version its last promotion to primary on this node continued after. */
  promoted: Record<string, number>;
  /** Fingerprint of the checksum seed the pool's blocks are keyed with (never the seed itself). */
  seedCheck: string;
}

/** A fingerprint of a checksum seed: enough to tell seeds apart, useless to recover one. */
function seedCheckOf(seed: number): string {
  return createHash('sha256').update(`rowan checksum seed ${seed}`).digest('hex').slice(0, 16);
}

/** The node's durable record of which shards it has received replicated data of (see the header). */
export class ReplicaRecord {
  private constructor(
    /** null: kept in memory by its owner (ReplicaRecord.inMemory). */
    private readonly path: string | null,
    private readonly poolId: string,
    private readonly seedCheck: string,
    readonly backup: Set<number>,
    readonly promoted: Map<number, number>,
  ) {}

  /**
   * Read `dataDir`'s record for the pool `poolId`. No record (or one of another pool): an empty one,
   * or -- when `poolHadData` (a pool older than records) -- one naming every shard in `legacyShards`.
   * Refuses (BAD_CONFIG) a configuration whose checksum seed is not the one the pool was written with:
   * its blocks would not verify, and the node would come up empty instead of failing.
   */
  static load(dataDir: string, poolId: string, poolHadData: boolean, legacyShards: number[], seed: number): ReplicaRecord {
    const check = seedCheckOf(seed);
    const path = dataDirFiles(dataDir).replicas;
    let text: string | null = null;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new RowanError(ErrorCodes.DATA_DIR, `cannot read ${path}: ${(err as Error).message}`);
    }
    if (text !== null) {
      let f: RecordFile;
      try {
        f = JSON.parse(text) as RecordFile;
      } catch {
        throw new RowanError(ErrorCodes.DATA_DIR, `${path} is not JSON: remove it only if the pool is new (it says which shards' b-log data this node may apply)`);
      }
      if (f.format !== RECORD_FORMAT || !Array.isArray(f.backup) || typeof f.promoted !== 'object' || f.promoted === null)
        throw new RowanError(ErrorCodes.DATA_DIR, `${path}: not a format ${RECORD_FORMAT} replica record`);
      if (f.poolId === poolId) {
        if (f.seedCheck !== check)
          throw new RowanError(ErrorCodes.BAD_CONFIG, `${dataDir}'s pool was written under another checksum seed than the configuration's checksumSeed (${seed === 0 ? 'absent' : 'set'}): the seed of a cluster never changes; use the configuration the cluster was made with`);
        const promoted = new Map(Object.entries(f.promoted).map(([s, v]) => [Number(s), v] as [number, number]));
        return new ReplicaRecord(path, poolId, check, new Set(f.backup), promoted);
      }
      // A record of an earlier pool (the pool file was replaced): nothing in this pool came from it.
    }
    if (poolHadData && seed !== 0)
      throw new RowanError(ErrorCodes.BAD_CONFIG, `${dataDir}'s pool holds data written before checksum seeds existed (unkeyed), and the configuration sets checksumSeed: remove checksumSeed from a cluster made before it, or start this node with an empty pool`);
    const r = new ReplicaRecord(path, poolId, check, new Set(poolHadData ? legacyShards : []), new Map());
    r.save();
    return r;
  }

  /** An empty record that lives in memory: its owner keeps it across the node's restarts (the
   *  simulator, test/sim, whose nodes' data dirs are memory). */
  static inMemory(): ReplicaRecord {
    return new ReplicaRecord(null, '', '', new Set(), new Map());
  }

  /**
   * Note that this node is a backup of `shards` (persisted before returning when anything is new). A
   * promotion recorded for one of them belonged to an earlier tenure as its primary and is forgotten:
   * what this node receives as a backup now comes from a primary whose versions are above that
   * promotion's (see the header, 3).
   */
  noteBackups(shards: Iterable<number>): void {
    let changed = false;
    for (const s of shards) {
      if (this.promoted.delete(s)) changed = true;
      if (this.backup.has(s)) continue;
      this.backup.add(s);
      changed = true;
    }
    if (changed) this.save();
  }

  /** Whether a promotion of `shard` to primary on this node is recorded for its current tenure. */
  hasPromotion(shard: number): boolean {
    return this.promoted.has(shard);
  }

  /** Note that this node's promotion to primary of `shard` continued after `version` (persisted). */
  notePromoted(shard: number, version: number): void {
    this.notePromotedAll(new Map([[shard, version]]));
  }

  /** notePromoted for many shards, with one write (a promotion of many shards). */
  notePromotedAll(versions: ReadonlyMap<number, number>): void {
    if (versions.size === 0) return;
    for (const [s, v] of versions) this.promoted.set(s, v);
    this.save();
  }

  private save(): void {
    if (this.path === null) return;
    const f: RecordFile = {
      format: RECORD_FORMAT,
      poolId: this.poolId,
      backup: [...this.backup].sort((a, b) => a - b),
      promoted: Object.fromEntries([...this.promoted].sort((a, b) => a[0] - b[0])),
      seedCheck: this.seedCheck,
    };
    writeDurably(this.path, JSON.stringify(f) + '\n');
  }
}

/** Write `path` so that a crash leaves either the old or the new content: temp file, fsync, rename,
 *  fsync of the directory. */
export function writeDurably(path: string, text: string): void {
  const tmp = `${path}.tmp`;
  try {
    const fd = openSync(tmp, 'w', 0o600);
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
    const dir = openSync(dirname(path), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  } catch (err) {
    throw new RowanError(ErrorCodes.DATA_DIR, `cannot write ${path}: ${(err as Error).message}`);
  }
}

/** writeDurably without blocking the event loop: the same steps through the libuv thread pool. For the
 *  node's main thread, which holds the lease: a synchronous fsync there waited up to 251 ms under a
 *  write load (ext4 commits the journal, and with it other files' dirty data, before it returns). */
export async function writeDurablyAsync(path: string, text: string): Promise<void> {
  const tmp = `${path}.tmp`;
  try {
    const f = await open(tmp, 'w', 0o600);
    try {
      await f.writeFile(text);
      await f.sync();
    } finally {
      await f.close();
    }
    await rename(tmp, path);
    const dir = await open(dirname(path), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  } catch (err) {
    throw new RowanError(ErrorCodes.DATA_DIR, `cannot write ${path}: ${(err as Error).message}`);
  }
}

/** The shards `nodeId` backs up in `c` (catching-up backups included) or receives by migration. */
export function receivedShards(c: ClusterConfig, nodeId: number): number[] {
  const out = new Set<number>();
  for (const s of c.shards) if (s.backups.includes(nodeId)) out.add(s.id);
  for (const m of c.migrations) if (m.target === nodeId) out.add(m.shard);
  return [...out];
}

/** Cold start's filter of b-log blocks for node `nodeId` under `c` (see the header, 2). */
export function coldStartBlogTrust(c: ClusterConfig, nodeId: number, record: ReplicaRecord): (shard: number, version: number) => boolean {
  const received = new Set(receivedShards(c, nodeId));
  // shard -> versions up to this one are accepted. A promotion continued after its recorded version:
  // that version itself may be the old primary's last acknowledged write (a planned move continues
  // right after the floor, without the gap), so it is accepted; everything above landed after.
  const upTo = new Map<number, number>();
  // A node the configuration lists dead is rejoining: it holds no shard, and every shard it kept is
  // reconciled with its primary before any of it is read or counted (../migration/reconcile.ts), so
  // it keeps the blocks of every shard it was ever a backup of.
  const rejoining = (c.dead ?? []).includes(nodeId);
  for (const s of c.shards) {
    if (received.has(s.id) || (rejoining && record.backup.has(s.id))) upTo.set(s.id, Infinity);
    else if (s.primary === nodeId && record.backup.has(s.id)) upTo.set(s.id, record.promoted.get(s.id) ?? Infinity);
  }
  return (shard, version) => plausibleVersion(version) && version <= (upTo.get(shard) ?? -1);
}

/** Owner ids of the one-sided regions (role Remote) other nodes of `c` may have written: every node
 *  the configuration names (dead ones too: their regions may hold entries only this node has), except
 *  this one (a node never writes regions to itself). */
export function remoteOwnersOf(c: ClusterConfig, nodeId: number): Set<number> {
  return new Set(c.nodes.filter((n) => n.id !== nodeId).map((n) => remoteRegionOwner(n.id)));
}
