// A counting semaphore bounding a client's outstanding requests (maxInFlight): beyond it, callers wait
// in FIFO order, so a burst of calls queues here instead of in socket buffers.
export class Slots {
  private free: number;
  private readonly waiters: (() => void)[] = [];
  private head = 0;

  constructor(readonly capacity: number) {
    this.free = capacity;
  }

  acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Hand the slot to the longest waiter, or return it. */
  release(): void {
    if (this.head < this.waiters.length) {
      const next = this.waiters[this.head]!;
      this.waiters[this.head++] = undefined as unknown as () => void;
      if (this.head === this.waiters.length) {
        this.waiters.length = 0;
        this.head = 0;
      } else if (this.head >= 1024 && this.head * 2 >= this.waiters.length) {
        this.waiters.splice(0, this.head); // drop the served prefix once it is most of the array
        this.head = 0;
      }
      next();
    } else {
      this.free++;
    }
  }
}
