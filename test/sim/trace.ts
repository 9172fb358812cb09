// The run's fingerprint: every event the simulator executes (type, node, time, key, outcome) is
// folded into two FNV-1a 32-bit hashes with different offsets. Two runs of one seed must print the
// same 16 hex digits; any divergence (a Map iterated in another order, a stray Math.random, a real
// timer) shows up here first.

export class TraceHash {
  private h1 = 0x811c9dc5;
  private h2 = 0x01000193 ^ 0x5bd1e995;
  events = 0;

  add(...parts: (string | number)[]): void {
    this.events++;
    for (const p of parts) {
      const s = typeof p === 'number' ? String(p) : p;
      for (let i = 0; i < s.length; i++) this.byte(s.charCodeAt(i) & 0xffff);
      this.byte(0x1f); // field separator
    }
    this.byte(0x1e); // record separator
  }

  private byte(b: number): void {
    this.h1 = Math.imul(this.h1 ^ b, 0x01000193);
    this.h2 = Math.imul(this.h2 ^ b, 0x01000193) ^ (this.h2 >>> 15);
  }

  hex(): string {
    return (this.h1 >>> 0).toString(16).padStart(8, '0') + (this.h2 >>> 0).toString(16).padStart(8, '0');
  }
}
