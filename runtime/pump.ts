// The loop that drives an inbox from the event loop: drain every ring, and when all are empty sleep on
// the doorbell (Atomics.waitAsync) instead of spinning, so idle actors cost nothing and several actors
// can share a core. Between busy passes it yields one macrotask turn (setImmediate) so timers (ticks)
// and port messages (stop) still run under sustained traffic.
//
// A pending Atomics.waitAsync does not keep a thread's event loop alive: the owner must hold something
// that does (an actor: its port listener; the node's main thread: its control socket), or the thread
// exits while asleep.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Inbox, RingMessage } from '../shm/mailbox.js';

export interface PumpHooks {
  dispatch(msg: RingMessage, from: string): void;
  /** After each pass that saw records (publish counters, flush outboxes). */
  afterPass?(records: number): void;
  /** After each wake-up from the doorbell. */
  onWake?(): void;
  /** Checked before every pass and before sleeping; the owner wakes the doorbell after setting it. */
  stopping(): boolean;
}

export async function pump(inbox: Inbox, h: PumpHooks): Promise<void> {
  while (!h.stopping()) {
    const n = inbox.drain(h.dispatch);
    if (n > 0) {
      h.afterPass?.(n);
      await nextTurn();
      continue;
    }
    const seq = inbox.bell.arm();
    // Re-check after announcing: a record published before arm() would otherwise sleep unseen.
    if (inbox.hasWork() || h.stopping()) {
      inbox.bell.disarm();
      continue;
    }
    await inbox.bell.sleep(seq);
    h.onWake?.();
  }
}
