// The two pieces every pipelined request/response connection of rowan needs (the client protocol in
// client/worker-connection.ts and the soft RNIC's fabric in runtime/fabric/tcp.ts).
import type { Socket } from 'node:net';

const ID_MAX = 0xffffffff;

/** Request ids 1..2^32-1, wrapping, skipping ids still in flight. 0 is reserved for stream errors. */
export class RequestIds {
  private next = 1;

  take(inFlight: { has(id: number): boolean }): number {
    for (;;) {
      const id = this.next;
      this.next = id === ID_MAX ? 1 : id + 1;
      if (!inFlight.has(id)) return id;
    }
  }
}

/** Frames written in one tick leave together (one writev, like a doorbell batch): cork, uncork next tick. */
export class CorkedWriter {
  private corked = false;

  constructor(private readonly socket: Socket) {}

  write(frame: Uint8Array): void {
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(() => {
        this.corked = false;
        this.socket.uncork();
      });
    }
    this.socket.write(frame);
  }
}
