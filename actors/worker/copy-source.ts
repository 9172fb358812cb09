// Re-replication's source side (§4.5 phase 3): the primary's worker answers COPY_SHARD with a batch of
// the shard's indexed entries (actors/shared/copy-batch.ts). The shard keeps serving meanwhile.
//
// Nothing written is missed. The request carries the new backup's term and is admitted only at this
// node's own term, so this node already serves a configuration listing the new backup: every PUT/DEL
// claiming a version from now on replicates to it (PrimaryPath takes the backups after the claim).
// Writes that claimed a version before may still be replicating to the old backups only; the first
// batch (cursor 0) waits until the shard's CommitVer reaches the version counter read at admission
// -- every such write has finished (indexed here if acknowledged) -- before it walks the index.
// v2 batches (../shared/copy-batch.ts) carry that counter: a version above it is a write claimed after
// the admission, which replicates to the new backup; a backup that kept its pool reconciles against it
// (../migration/reconcile.ts). KEYS requests read named keys (no barrier: the walk's first batch ran it).
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { defaultTimings } from '../../config/timings.js';
import type { CommitTracker } from '../shared/commit.js';
import { decodeCopyRequest, isV2, readBatch, readKeys } from '../shared/copy-batch.js';
import { readPackedBatch } from '../shared/copy-packed.js';
import { nextVersion } from '../shared/node-shared.js';
import type { WorkerCore } from './core.js';

/** The first batch waits for older writes of the shard to finish (at most copyBarrierMs,
 *  config/timings.ts), looking again this often. */
const BARRIER_POLL_MS = 2;

export class CopySource {
  constructor(
    private readonly core: WorkerCore,
    private readonly commit: CommitTracker | null,
    private readonly frameMax: number,
  ) {}

  async copyShard(request: Uint8Array, clientTerm: number): Promise<Uint8Array> {
    const req = decodeCopyRequest(request);
    const { d } = this.core;
    const cell = d.cell;
    const t0 = this.core.now();
    // Admission: at this node's term, the shard's primary, not being promoted.
    for (;;) {
      if (!cell || (cell.admit(clientTerm, this.core.now()) === 'ok' && !cell.shardBlocked(req.shard))) break;
      if (this.core.now() - t0 > defaultTimings.copyBarrierMs) throw new RowanError(ErrorCodes.STALE_TERM, `node ${d.nodeId} is reconfiguring; retry`);
      await cell.changed(100);
    }
    const c = d.config();
    if (clientTerm !== c.term) throw new RowanError(ErrorCodes.STALE_TERM, `request routed with term ${clientTerm}, this node is at term ${c.term}`);
    const s = c.shards[req.shard];
    if (!s || s.primary !== d.nodeId) throw new RowanError(ErrorCodes.WRONG_SHARD, `shard ${req.shard} is not served by node ${d.nodeId}`);
    // A v2 walk's first batch claims a version of its own, C, that no write ever gets: every write
    // claimed before it is below it (and finished before the walk reads: the barrier), every later
    // one above it; a backup that kept its pool restamps with it (../migration/reconcile.ts).
    const first = req.cursor === 0 && isV2(req) && !req.keys;
    const v0 = first ? this.claimUnused(req.shard) : Number(Atomics.load(d.shared.versions, req.shard)); // every claim so far is at or below it
    if (req.cursor === 0 && this.commit) {
      while (this.commit.commitVer(req.shard) < v0) {
        if (this.core.now() - t0 > defaultTimings.copyBarrierMs) throw new RowanError(ErrorCodes.TIMEOUT, `shard ${req.shard}: writes older than the copy still running after ${defaultTimings.copyBarrierMs} ms; retry`);
        await new Promise((r) => setTimeout(r, BARRIER_POLL_MS));
      }
    }
    const index = this.core.indexOf(req.shard);
    this.core.enterEpoch();
    try {
      if (req.keys) return readKeys(index, d.region.bytes, req.shard, req.keys, this.core.reader, d.limits, this.frameMax, v0);
      if (req.packed) return readPackedBatch(index, d.region.bytes, req.shard, req, d.limits, this.frameMax, v0);
      return readBatch(index, d.region.bytes, req.shard, req, d.limits, this.frameMax, v0);
    } finally {
      this.core.exitEpoch();
    }
  }

  /** Claim the shard's next version and finish it at once: no write holds it (CommitVer passes it). */
  private claimUnused(shard: number): number {
    const { d } = this.core;
    if (this.commit) {
      const v = this.commit.claim(shard); // covered by the version mark before it leaves the node
      this.commit.finish(shard, v);
      return v;
    }
    const v = nextVersion(d.shared.versions, shard);
    d.shared.marks?.cover(shard, v);
    return v;
  }
}
