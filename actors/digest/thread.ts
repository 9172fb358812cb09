// Digest actor (§4.4): parses the Used b-log segments the control actor hands over, in order. Today it
// verifies and counts their blocks (actors/digest/segments.ts); updating the indexes of the shards it
// owns, CommitVerArray/MaxVerArray and handing committed segments to clean come with the ROWAN-KV data
// path and commit tracking.
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
    digest = new DigestSegments(ctx.config.dataDir, ctx.config.persistence);
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
