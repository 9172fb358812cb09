// Digest actor (§4.4): parses the Used b-log segments the control actor hands over, in order, verifies
// their blocks and updates the backup indexes of the shards it owns (actors/digest/segments.ts).
// CommitVerArray/MaxVerArray and handing committed segments to clean come with commit tracking.
import { defineActor, runActor } from '../../runtime/actor.js';
import { invariant } from '../../runtime/errors.js';
import { I64 } from '../../shm/counters.js';
import { RecordKind } from '../../shm/mailbox.js';
import { DigestSegments } from './segments.js';
import type { DigestInbound } from './protocol.js';

let digest: DigestSegments | null = null;

export const digestActor = defineActor<DigestInbound>({
  role: 'digest',
  accepts: [RecordKind.SEGMENT_BATCH],
  init: (ctx) => {
    const count = ctx.config.roles.find((r) => r.role === 'digest')?.count ?? 1;
    digest = new DigestSegments(ctx.config.dataDir, ctx.config.persistence, { id: ctx.id, count }, ctx.kv);
  },
  handlers: {
    [RecordKind.SEGMENT_BATCH]: (msg, _from, ctx) => {
      invariant(digest !== null, 'digest got a batch before init');
      for (const s of msg.segments) digest.digest(s);
      ctx.counters.local[I64.DIGESTED_SEGMENTS] = digest.segments;
      ctx.counters.local[I64.DIGESTED_BLOCKS] = digest.scan.blocks;
    },
  },
  drain: () => {
    digest?.close();
    digest = null;
  },
});

runActor(digestActor);
