// Digest actor (§4.4): parses the Used b-log segments the control actor hands over, in order, verifies
// their blocks, updates the backup indexes of the shards it owns and votes segments committed once the
// primaries' CommitVers cover them (actors/digest/segments.ts). Segments that become Committed are
// announced to the clean actors (which also find them in the segment meta table on their own).
import { defineActor, runActor } from '../../runtime/actor.js';
import { invariant } from '../../config/base/errors.js';
import { I64 } from '../../shm/counters.js';
import { RecordKind } from '../../shm/mailbox.js';
import { kvOf } from '../shared/node-shared.js';
import { DigestSegments } from './segments.js';
import type { DigestInbound } from './protocol.js';

let digest: DigestSegments | null = null;

export const digestActor = defineActor<DigestInbound>({
  role: 'digest',
  accepts: [RecordKind.SEGMENT_BATCH],
  init: (ctx) => {
    const count = ctx.config.roles.find((r) => r.role === 'digest')?.count ?? 1;
    digest = new DigestSegments(ctx.pool, { id: ctx.id, count }, kvOf(ctx), (shard, version, floor) =>
      ctx.log.error({ shard, version, floor, event: 'late-block' }, `refused a b-log block of shard ${shard} at version ${version} as late: at or below the shard's floor ${floor} (only a write that was never acknowledged may be late; rowan_blog_late_blocks_total counts them)`),
    );
  },
  handlers: {
    [RecordKind.SEGMENT_BATCH]: (msg, _from, ctx) => {
      invariant(digest !== null, 'digest got a batch before init');
      const committed: number[] = [];
      for (const s of msg.segments) committed.push(...digest.digest(s));
      ctx.counters.local[I64.DIGESTED_SEGMENTS] = digest.segments;
      ctx.counters.local[I64.DIGESTED_BLOCKS] = digest.scan.blocks;
      ctx.counters.local[I64.COMMITTED_SEGMENTS] = digest.voted;
      ctx.counters.local[I64.DIGEST_LATE_BLOCKS] = digest.late;
      ctx.counters.local[I64.DIGEST_LATE_DEL_BLOCKS] = digest.lateDels;
      if (committed.length === 0) return;
      // A hint only: a clean actor whose ring is full finds the segments in the meta table anyway.
      for (const to of ctx.peers('clean')) ctx.send(to, { kind: RecordKind.SEGMENT_BATCH, segments: Int32Array.from(committed) });
    },
  },
  drain: () => {
    digest?.close();
    digest = null;
  },
});

runActor(digestActor);
