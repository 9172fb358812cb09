// Re-replication (§4.5 phase 3), the new backup's side, on the node's main thread: for every shard the
// committed configuration lists this node as catching up on, copy the shard's existing entries from
// its primary in batches (COPY_SHARD, ../shared/copy-batch.ts) and persist them through the promotion log,
// indexed version-conditionally (../shared/gather-scatter.ts absorbEntries): an entry that reached this node by
// replication since the configuration added it -- newer, or a DEL -- wins over the copy of an older
// one whichever lands first (digest's b-log updates are version-conditional too). At the end of the
// walk the node tells the manager (`caughtUp`), which commits a term without the mark.
//
// The copy restarts from the first bucket when the shard's primary changes (a failover during the
// copy). It resumes after a restart of the whole cluster (the mark is in the stored configuration);
// a node that died while catching up is failed over like any other and never counted as a replica.
import type { TlsMaterial } from '../../runtime/net/tls.js';
import type { Clock } from '../../config/base/clock.js';
import { isCatchingUp, nodeOf } from '../../config/cluster.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { defaultTimings } from '../../config/timings.js';
import type { Limits } from '../../config/limits.js';
import type { Logger } from '../../config/base/log.js';
import { encodeRequest, Op, Status } from '../../runtime/rpc/frames.js';
import type { Pool } from '../../shm/pool.js';
import type { TLog } from '../../shm/tlog.js';
import { remoteError, RpcConnection } from '../../client/worker-connection.js';
import type { ConfigCell } from '../shared/config-cell.js';
import { COPY_BATCH_BYTES, COPY_DONE, decodeBatch, encodeCopyRequest } from '../shared/copy-batch.js';
import { absorbEntries, yieldToRenewals } from '../shared/gather-scatter.js';
import type { NodeToManager } from '../shared/manager-protocol.js';
import type { KvShared } from '../shared/node-shared.js';

export interface CatchUpDeps {
  nodeId: number;
  cell: ConfigCell;
  pool: Pool;
  shared: KvShared;
  /** The promotion log (one instance on the main thread, shared with promotions). */
  log: () => TLog;
  limits: Limits;
  clock: Clock;
  logger: Logger;
  send(m: NodeToManager): void;
  /** The cluster secret the primary's client port demands (null: the node serves without auth). */
  secret: Uint8Array | null;
  /** TLS to the primary's client port (this node's certificate: a peer over mutual TLS), or null. */
  tls?: TlsMaterial | null;
}

export interface CopyStats {
  entries: number;
  bytes: number;
  absorbed: number;
  ms: number;
}

export class CatchUp {
  private readonly running = new Set<number>();
  private stopped = false;
  /** Finished copies, for status and tests. */
  readonly done: (CopyStats & { shard: number; from: number })[] = [];

  constructor(private readonly d: CatchUpDeps) {}

  /** Start copying every shard the committed configuration marks this node catching up on. */
  onConfig(): void {
    if (this.stopped) return;
    const c = this.d.cell.config();
    for (const x of c.catchingUp ?? []) {
      if (x.node !== this.d.nodeId || this.running.has(x.shard)) continue;
      this.running.add(x.shard);
      void this.run(x.shard)
        .catch((err: Error) => this.d.logger.error({ shard: x.shard, err: err.message }, `re-replication of shard ${x.shard} stopped`))
        .finally(() => this.running.delete(x.shard));
    }
  }

  stop(): void {
    this.stopped = true;
  }

  private async run(shard: number): Promise<void> {
    const { cell, clock, logger } = this.d;
    let from = -1;
    let cursor = 0;
    let conn: RpcConnection | null = null;
    let st: CopyStats = { entries: 0, bytes: 0, absorbed: 0, ms: 0 };
    let t0 = clock.now();
    let reportedAt = -Infinity;
    let failures = 0;
    try {
      while (!this.stopped && !cell.evicted()) {
        const c = cell.config();
        if (!isCatchingUp(c, shard, this.d.nodeId)) return;
        const primary = c.shards[shard]!.primary;
        if (primary !== from) {
          if (from >= 0) logger.warn({ shard, from, to: primary }, `re-replication of shard ${shard}: its primary moved to node ${primary}; copying again from the start`);
          else logger.info({ shard, from: primary, term: c.term }, `re-replication of shard ${shard}: copying its entries from node ${primary}`);
          conn?.close();
          conn = null;
          from = primary;
          cursor = 0;
          st = { entries: 0, bytes: 0, absorbed: 0, ms: 0 };
          t0 = clock.now();
        }
        if (cursor === COPY_DONE) {
          if (clock.now() - reportedAt >= defaultTimings.catchUpResendMs) {
            this.d.send({ t: 'caughtUp', node: this.d.nodeId, term: c.term, shard, from, ...st });
            reportedAt = clock.now();
          }
          await cell.changed(defaultTimings.catchUpResendMs);
          continue;
        }
        try {
          if (!conn) {
            const n = nodeOf(c, primary);
            conn = await RpcConnection.open({ host: n.host, port: n.workerPorts[shard % n.workerPorts.length]! }, defaultTimings.catchUpRequestTimeoutMs, this.d.limits, this.d.secret === null ? null : { role: 'peer', secret: this.d.secret }, this.d.tls ?? null);
          }
          const key = encodeCopyRequest({ shard, cursor, bytesMax: COPY_BATCH_BYTES });
          const r = await conn.request((id) => encodeRequest({ op: Op.COPY_SHARD, id, term: c.term, key }));
          if (r.status === Status.ERROR) throw remoteError(r);
          if (r.status !== Status.VALUE) throw new RowanError(ErrorCodes.BAD_FRAME, `COPY_SHARD answered with status ${r.status}`);
          const batch = decodeBatch(r.value, shard);
          // The configuration may have moved while the batch was in flight; its entries are still
          // the shard's, and absorbing is version-conditional.
          const a = absorbEntries(this.d.pool, this.d.shared, this.d.log(), batch.entries, this.d.limits);
          st.entries += batch.entries.length;
          st.bytes += batch.bytes;
          st.absorbed += a.absorbed;
          cursor = batch.next;
          failures = 0;
          if (cursor === COPY_DONE) {
            st.ms = clock.now() - t0;
            const mbps = st.bytes / 1e6 / Math.max(st.ms / 1000, 1e-3);
            logger.warn(
              { event: 'caught-up', shard, from, term: c.term, entries: st.entries, bytes: st.bytes, absorbed: st.absorbed, ms: +st.ms.toFixed(1), mbps: +mbps.toFixed(2) },
              `re-replication of shard ${shard} from node ${from}: ${st.entries} entries, ${st.bytes} B in ${st.ms.toFixed(0)} ms (${mbps.toFixed(2)} MB/s); caught up`,
            );
            this.done.push({ shard, from, ...st });
          }
          await yieldToRenewals();
        } catch (err) {
          const code = err instanceof RowanError ? err.code : 'error';
          if (code !== ErrorCodes.STALE_TERM && code !== ErrorCodes.WRONG_SHARD && code !== ErrorCodes.LEASE_EXPIRED) {
            conn?.close();
            conn = null;
          }
          if (++failures % 20 === 1) logger.warn({ shard, from, code, err: (err as Error).message, failures }, `re-replication of shard ${shard}: batch failed (${code}); retrying`);
          await cell.changed(100);
        }
      }
    } finally {
      conn?.close();
    }
  }
}
