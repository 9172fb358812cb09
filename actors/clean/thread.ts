// Clean actor (§4.4): later it garbage-collects committed segments whose live bytes fall under the
// threshold (copy live entries, update the index, free the segment). Today it starts, pins, answers
// pings and counts the segment batches it receives.
import { defineActor, runActor } from '../../runtime/actor.js';
import { RecordKind } from '../../shm/mailbox.js';
import type { CleanInbound } from './protocol.js';

export const cleanActor = defineActor<CleanInbound>({
  role: 'clean',
  accepts: [RecordKind.SEGMENT_BATCH],
  handlers: {
    [RecordKind.SEGMENT_BATCH]: () => {},
  },
});

runActor(cleanActor);
