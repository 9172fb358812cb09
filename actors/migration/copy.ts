// The migration actor's copies (§4.5 phase 3 re-replication, §4.6 copy moves): for every shard the
// committed configuration lists this node as catching up on -- a new backup, or the target of a copy
// move (../manager/copy-moves.ts) -- copy the shard's existing entries from its primary (COPY_SHARD,
// ../shared/copy-batch.ts) on the migration actor's thread and persist them through its own log
// (MIGRATION_LOG_OWNER, config/base/ids.ts), indexed version-conditionally (../shared/gather-scatter.ts absorbEntries): an entry that reached this
// node by replication since the configuration added it -- newer, or a DEL -- wins over the copy of an
// older one whichever lands first (digest's b-log updates are version-conditional too). At the end of
// the walk the actor publishes the copy in the node's copy reports (../shared/copy-reports.ts); the
// node's main thread tells the manager (`caughtUp`, ../node/copy-reports.ts), which commits a term
// without the mark.
//
// The copy streams: the primary's home buckets are split into COPY_STREAMS ranges walked side by side
// on one connection, each request answered with up to a frame (1 MiB) of entries packed back to back as
// the primary's log stores them (../shared/copy-packed.ts: verified in one pass, landed with one copy
// and one persist per segment, indexed from where they landed); the first batch
// (bucket 0) goes alone and short, as its barrier waits for older writes to finish
// (../../actors/worker/copy-source.ts). Each range keeps its next request in flight while it absorbs a
// batch, so the primary's walk and the wire overlap the absorbing.
// A node that kept its pool through a restart (`kept`: the highest version it held of the shard at
// its cold start) asks for the entries above that version in full and the others by key and version
// only, then reconciles (./reconcile.ts); a node with nothing of the shard copies it all.
//
// The copy restarts from the first bucket when the shard's primary changes (a failover during the
// copy); a request refused at a term change is sent again at the new term. It resumes after a restart
// of the whole cluster (the mark is in the stored configuration); a node that died while catching up is
// failed over like any other and never counted as a replica.
import type { TlsMaterial } from '../../runtime/net/tls.js';
import type { Clock } from '../../config/base/clock.js';
import { isCatchingUp, nodeOf, type ClusterConfig } from '../../config/cluster.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { defaultTimings } from '../../config/timings.js';
import type { Limits } from '../../config/limits.js';
import type { Logger } from '../../config/base/log.js';
import { encodeRequest, Op, Status } from '../../runtime/rpc/frames.js';
import type { Pool } from '../../shm/pool.js';
import type { TLog } from '../../shm/tlog.js';
import { remoteError, RpcConnection } from '../../client/worker-connection.js';
import type { ConfigCell } from '../shared/config-cell.js';
import { COPY_BATCH_BYTES, COPY_DONE, decodeBatch, encodeCopyRequest, KEYS_CURSOR, type CopyRequest } from '../shared/copy-batch.js';
import { RenewalYielder, yieldToRenewals } from '../shared/gather-scatter.js';
import { decodePackedBatch, packedOfV2, type PackedBatch } from '../shared/copy-packed.js';
import { absorbPacked, rawEntryOf, verifyRaw } from './absorb.js';
import type { CopyReports } from '../shared/copy-reports.js';
import type { KvShared } from '../shared/node-shared.js';
import { Reconcile, type ReconcileStats } from './reconcile.js';

/** Bucket ranges of one shard walked side by side (requests in flight on the connection). */
export const COPY_STREAMS = 4;
/** Copy requests in flight on this node, all shards together: a range asks for its next batch while
 *  it absorbs one, so this lets two shards (or four at half that) stream at full depth. A request in
 *  flight costs this thread nothing until its answer arrives (a frame, 1 MiB at most, buffered per
 *  request: 16 MiB on this node at worst); absorbing runs in slices
 *  (PACKED_SLICE) that let the other actors of a shared `background` thread (control, digest, clean)
 *  in, so many shards copying at once do not starve them. */
export const COPY_REQUESTS_MAX = 16;
/** The walk's first batch, alone (its barrier on the primary), kept short: the other ranges start
 *  once it is back. */
export const FIRST_BATCH_BYTES = 64 * 1024;
/** Listed keys (or index buckets of a sweep) handled between two looks at the lease. */
export const ABSORB_SLICE = 64;
/** Entries of a packed batch landed and indexed between two looks at the lease (a few hundred us). */
export const PACKED_SLICE = 512;

export interface CatchUpDeps {
  nodeId: number;
  cell: ConfigCell;
  pool: Pool;
  shared: KvShared;
  /** The migration actor's log of copied entries (one instance, on its thread). */
  log: () => TLog;
  limits: Limits;
  clock: Clock;
  logger: Logger;
  /** Where finished copies are published for the main thread (it reports them to the manager). */
  reports: CopyReports;
  /** The cluster secret the primary's client port demands (null: the node serves without auth). */
  secret: Uint8Array | null;
  /** TLS to the primary's client port (this node's certificate: a peer over mutual TLS), or null. */
  tls?: TlsMaterial | null;
  /** Shards whose entries this node kept through a restart: the highest version it held of each. */
  kept?: ReadonlyMap<number, number>;
}

export interface CopyStats {
  entries: number;
  bytes: number;
  absorbed: number;
  ms: number;
  /** Until the first batch came back (the primary's admission at this node's term and its barrier). */
  firstMs?: number;
}

/** The shard's primary changed under the copy: it starts again from the new one. */
class PrimaryMoved extends Error {}

/** One copy of one shard from one primary. */
interface Copy {
  shard: number;
  from: number;
  /** The connection every range's requests share (opened once, again after a failure). */
  conn: Promise<RpcConnection> | null;
  st: CopyStats;
  rec: Reconcile | null;
  failures: number;
  /** The primary refused a walk v3 request (an older build): walk v2 batches from it. */
  v2Only: boolean;
}

export class CatchUp {
  private readonly running = new Set<number>();
  private stopped = false;
  /** Copy requests in flight, and those waiting for a turn (COPY_REQUESTS_MAX). */
  private inFlight = 0;
  private readonly turns: (() => void)[] = [];
  /** Every copy's slices on this thread share one: it renews the lease between them. */
  private readonly yielder: RenewalYielder;
  /** Shards this node held a replica of in the last configuration it saw, and those it left while
   *  running (a copy move took its replica away): its index of such a shard may hold entries whose
   *  keys the primary has since deleted (and dropped the tombstones of), so a later copy of it to
   *  this node reconciles (./reconcile.ts) instead of only adding entries. */
  private held: Set<number> | null = null;
  private readonly left = new Set<number>();
  /** Entries and bytes taken by every copy so far (running ones included), for status. */
  readonly totals = { entries: 0, bytes: 0 };
  /** Finished copies, for status and tests. */
  readonly done: (CopyStats & { shard: number; from: number; kept: boolean } & Partial<ReconcileStats>)[] = [];

  constructor(private readonly d: CatchUpDeps) {
    this.yielder = new RenewalYielder(d.clock);
  }

  /** Start copying every shard the committed configuration marks this node catching up on. */
  onConfig(): void {
    if (this.stopped) return;
    const c = this.d.cell.config();
    this.noteLeft(c);
    for (const x of c.catchingUp ?? []) {
      if (x.node !== this.d.nodeId || this.running.has(x.shard)) continue;
      this.running.add(x.shard);
      void this.run(x.shard)
        .catch((err: Error) => this.d.logger.error({ shard: x.shard, err: err.message }, `re-replication of shard ${x.shard} stopped`))
        .finally(() => this.running.delete(x.shard));
    }
  }

  private noteLeft(c: ClusterConfig): void {
    const now = new Set(c.shards.filter((s) => s.primary === this.d.nodeId || s.backups.includes(this.d.nodeId)).map((s) => s.id));
    for (const s of this.held ?? []) if (!now.has(s)) this.left.add(s);
    this.held = now;
  }

  stop(): void {
    this.stopped = true;
  }

  /** After stop(): whether every copy ended within `ms` (each ends at its next request). */
  async ended(ms: number): Promise<boolean> {
    const t0 = this.d.clock.now();
    while (this.running.size > 0 && this.d.clock.now() - t0 < ms) await new Promise((r) => setTimeout(r, 5));
    return this.running.size === 0;
  }

  private active(shard: number): boolean {
    return !this.stopped && !this.d.cell.evicted() && isCatchingUp(this.d.cell.config(), shard, this.d.nodeId);
  }

  /** Copies running now. */
  get copies(): number {
    return this.running.size;
  }

  /** Copy from the current primary until caught up there; the report stands until the mark is gone. */
  private async run(shard: number): Promise<void> {
    const { cell, logger, reports } = this.d;
    let copied: { from: number; st: CopyStats } | null = null;
    try {
      while (this.active(shard)) {
        const c = cell.config();
        const primary = c.shards[shard]!.primary;
        if (copied === null || copied.from !== primary) {
          if (copied) logger.warn({ shard, from: copied.from, to: primary }, `re-replication of shard ${shard}: its primary moved to node ${primary}; copying again from the start`);
          copied = null;
          reports.copying(shard);
          try {
            copied = { from: primary, st: await this.copy(shard, primary) };
            reports.caughtUp(shard, { term: c.term, from: primary, ...copied.st });
          } catch (err) {
            if (!(err instanceof PrimaryMoved)) throw err;
          }
          continue;
        }
        await cell.changed(defaultTimings.catchUpResendMs);
      }
    } finally {
      reports.clear(shard);
    }
  }

  private async copy(shard: number, from: number): Promise<CopyStats> {
    const { clock, logger } = this.d;
    // Kept through a restart: reconcile above the highest version held then; left while running:
    // reconcile from version 0 (everything comes in full; what the primary lacks is dropped).
    const above = this.d.kept?.get(shard) ?? (this.left.has(shard) ? 0 : undefined);
    const rec = above !== undefined ? new Reconcile(this.d.pool, this.d.shared, this.d.log, this.d.limits, shard) : null;
    const cp: Copy = { shard, from, conn: null, st: { entries: 0, bytes: 0, absorbed: 0, ms: 0 }, rec, failures: 0, v2Only: false };
    const t0 = clock.now();
    logger.info({ shard, from, kept: rec !== null, above }, `re-replication of shard ${shard}: ${rec ? `reconciling the entries kept through the restart (up to version ${above}) with` : 'copying its entries from'} node ${from}`);
    try {
      await this.walk(cp, above ?? 0);
      if (rec) await this.reconcile(cp, rec);
    } finally {
      void cp.conn?.then((c) => c.close(), () => {});
    }
    cp.st.ms = clock.now() - t0;
    const s = cp.st;
    const mbps = s.bytes / 1e6 / Math.max(s.ms / 1000, 1e-3);
    const r = rec?.stats;
    logger.warn(
      { event: 'caught-up', shard, from, term: this.d.cell.term(), entries: s.entries, bytes: s.bytes, absorbed: s.absorbed, ms: +s.ms.toFixed(1), firstMs: s.firstMs, mbps: +mbps.toFixed(2), kept: rec !== null, ...(r ?? {}) },
      `re-replication of shard ${shard} from node ${from}: ${s.entries} entries, ${s.bytes} B in ${s.ms.toFixed(0)} ms (${mbps.toFixed(2)} MB/s)` +
        `${r ? `; kept its pool: ${r.listed} listed, ${r.fetched} read again, ${r.restamped} restamped, ${r.dropped} dropped` : ''}; caught up`,
    );
    this.done.push({ shard, from, kept: rec !== null, ...s, ...(r ?? {}) });
    this.left.delete(shard);
    return s;
  }

  /** Walk the primary's index: a short first batch alone (its barrier), then COPY_STREAMS ranges at
   *  once, each asking for its next batch before it absorbs the one it has (a round trip and the
   *  primary's walk overlap this thread's absorbing instead of adding to it). */
  private async walk(cp: Copy, above: number): Promise<void> {
    const buckets = this.d.shared.indexes[cp.shard]?.bucketCount ?? 1; // the primary's table is sized alike
    const step = Math.max(1, Math.ceil(buckets / COPY_STREAMS));
    const endOf = (i: number) => (i === COPY_STREAMS - 1 ? COPY_DONE : (i + 1) * step);
    const t0 = this.d.clock.now();
    const packed = (cursor: number, end: number, bytesMax = COPY_BATCH_BYTES): CopyRequest => ({ shard: cp.shard, cursor, bytesMax, above, end, packed: !cp.v2Only });
    const first = await this.ask(cp, packed(0, endOf(0), FIRST_BATCH_BYTES), this.packedOf(cp));
    cp.st.firstMs = +(this.d.clock.now() - t0).toFixed(1);
    if (cp.rec) cp.rec.counter = first.counter;
    const stripe = async (i: number, cursor: number, had: PackedBatch | null): Promise<void> => {
      let b = had;
      while (b !== null || cursor !== COPY_DONE) {
        const next = cursor === COPY_DONE ? null : this.ask(cp, packed(cursor, endOf(i)), this.packedOf(cp));
        next?.catch(() => {}); // awaited below; a take that throws first leaves it unawaited
        if (b) await this.take(cp, b);
        b = next ? await next : null;
        cursor = b ? b.next : COPY_DONE;
      }
    };
    await Promise.all(Array.from({ length: COPY_STREAMS }, (_, i) => (i === 0 ? stripe(0, first.next, first) : stripe(i, i * step, null))));
  }

  /** The decoder of a walk's batches, packed or (from a primary of an older build) v2, verified whole
   *  before any entry of it is used. */
  private packedOf(cp: Copy): (u: Uint8Array, req: CopyRequest) => PackedBatch {
    return (u, req) => (req.packed ? decodePackedBatch(u, cp.shard, this.d.limits) : packedOfV2(decodeBatch(u, cp.shard, true), cp.shard, this.d.limits));
  }

  /** Land and index a batch's full entries; a reconcile notes its listed ones. In slices, letting the
   *  thread's other actors (and timers) in between. */
  private async take(cp: Copy, b: PackedBatch): Promise<void> {
    cp.st.bytes += b.bytes;
    this.totals.bytes += b.bytes;
    for (let i = 0; i < b.count; i += PACKED_SLICE) {
      const to = Math.min(b.count, i + PACKED_SLICE);
      cp.st.absorbed += absorbPacked(this.d.pool, this.d.shared, this.d.log(), b, i, to, this.d.limits);
      cp.rec?.noteBatch(Array.from(b.versions.subarray(i, to)), []);
      cp.st.entries += to - i;
      this.totals.entries += to - i;
      await this.yielder.slice();
    }
    for (let i = 0; i < b.listed.length; i += ABSORB_SLICE) {
      cp.rec?.noteBatch([], b.listed.slice(i, i + ABSORB_SLICE));
      await this.yielder.slice();
    }
  }

  private async reconcile(cp: Copy, rec: Reconcile): Promise<void> {
    for (let keys of rec.fetchGroups()) {
      while (keys.length > 0) {
        const b = await this.ask(cp, { shard: cp.shard, cursor: KEYS_CURSOR, bytesMax: COPY_BATCH_BYTES, keys }, (u) => decodeBatch(u, cp.shard, true));
        const answered = b.next === COPY_DONE ? keys.length : b.next; // the rest did not fit the frame
        if (answered <= 0 || answered > keys.length) throw new RowanError(ErrorCodes.BAD_FRAME, `COPY_SHARD KEYS batch answered ${answered} of ${keys.length} keys`);
        cp.st.bytes += b.bytes;
        rec.fix(keys.slice(0, answered), verifyRaw(b.raws, cp.shard, this.d.limits).map(rawEntryOf));
        keys = keys.slice(answered);
        await yieldToRenewals();
      }
    }
    await rec.sweep(this.yielder);
  }

  /**
   * One request to the shard's primary at this node's term: sent again at the new term when refused
   * at a term change, on a new connection when the old one failed; PrimaryMoved when the primary
   * changed (or this node no longer catches up on the shard).
   */
  private async ask<T>(cp: Copy, req: CopyRequest, decode: (u: Uint8Array, req: CopyRequest) => T): Promise<T> {
    for (;;) {
      if (!this.active(cp.shard)) throw new PrimaryMoved('no longer catching up');
      const c = this.d.cell.config();
      if (c.shards[cp.shard]!.primary !== cp.from) throw new PrimaryMoved('primary moved');
      try {
        if (!cp.conn) {
          const n = nodeOf(c, cp.from);
          cp.conn = RpcConnection.open({ host: n.host, port: n.workerPorts[cp.shard % n.workerPorts.length]! }, defaultTimings.catchUpRequestTimeoutMs, this.d.limits, this.d.secret === null ? null : { role: 'peer', secret: this.d.secret }, this.d.tls ?? null);
        }
        const conn = await cp.conn;
        const key = encodeCopyRequest(req);
        const r = await this.turn(() => conn.request((id) => encodeRequest({ op: Op.COPY_SHARD, id, term: c.term, key })));
        if (r.status === Status.ERROR) throw remoteError(r);
        if (r.status !== Status.VALUE) throw new RowanError(ErrorCodes.BAD_FRAME, `COPY_SHARD answered with status ${r.status}`);
        // The configuration may have moved while the batch was in flight; its entries are still the
        // shard's, and absorbing is version-conditional.
        cp.failures = 0;
        return decode(r.value, req);
      } catch (err) {
        const code = err instanceof RowanError ? err.code : 'error';
        if (code === ErrorCodes.BAD_ARGUMENT && req.packed) {
          req = this.v2Walk(cp, req, err as Error); // the primary predates walk v3 (a rolling upgrade)
          continue;
        }
        if (code !== ErrorCodes.STALE_TERM && code !== ErrorCodes.WRONG_SHARD && code !== ErrorCodes.LEASE_EXPIRED && cp.conn) {
          void cp.conn.then((x) => x.close(), () => {});
          cp.conn = null;
        }
        if (++cp.failures % 20 === 1) this.d.logger.warn({ shard: cp.shard, from: cp.from, code, err: (err as Error).message, failures: cp.failures }, `re-replication of shard ${cp.shard}: batch failed (${code}); retrying`);
        await this.d.cell.changed(100);
      }
    }
  }

  /** A walk v3 request refused as malformed: the primary runs an older build (a rolling upgrade); this
   *  copy asks it for v2 batches from here on (each full entry framed on its own: more CPU per entry). */
  private v2Walk(cp: Copy, req: CopyRequest, err: Error): CopyRequest {
    if (!cp.v2Only) this.d.logger.warn({ shard: cp.shard, from: cp.from, err: err.message }, `re-replication of shard ${cp.shard}: node ${cp.from} refused a packed walk request (an older build?); asking it for v2 batches`);
    cp.v2Only = true;
    return { ...req, packed: false };
  }

  /** Run `f` once fewer than COPY_REQUESTS_MAX copy requests are in flight on this node. */
  private async turn<T>(f: () => Promise<T>): Promise<T> {
    while (this.inFlight >= COPY_REQUESTS_MAX) await new Promise<void>((r) => this.turns.push(r));
    this.inFlight++;
    try {
      return await f();
    } finally {
      this.inFlight--;
      this.turns.shift()?.();
    }
  }
}
