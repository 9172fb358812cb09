// A persist trace (shm/trace.ts) that records only while enabled -- the measurement window -- and at
// most `cap` records, so tracing costs nothing outside the window and memory stays bounded.
import { PersistTrace } from '../../shm/trace.js';
import type { TraceArrays } from './protocol.js';

export class WindowTrace extends PersistTrace {
  enabled = false;
  cap = 0;
  capped = false;

  override record(addr: number, len: number): void {
    if (!this.enabled) return;
    if (this.count >= this.cap) {
      this.capped = true;
      return;
    }
    super.record(addr, len);
  }

  take(): TraceArrays {
    return { ...this.snapshot(), capped: this.capped };
  }

  reset(cap: number): void {
    this.clear();
    this.enabled = false;
    this.capped = false;
    this.cap = cap;
  }
}
