// The lease client's renewals fall on a grid of the renew period on the monotonic clock
// (actors/node/lease-client.ts renewGridDelayMs, issue 26): the nodes of one host renew together and
// the manager reads their renewals in one wakeup. The period, and the first renewal within one period
// of the hello, are unchanged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock, type TimerHandle, type Timers } from '../../../../config/base/clock.js';
import { createLogger } from '../../../../config/base/log.js';
import { LeaseClient, renewGridDelayMs, type DialManager, type LeaseSocket } from '../../../../actors/node/lease-client.js';
import type { ConfigCell } from '../../../../actors/shared/config-cell.js';

test('the delay to the next grid point is in (0, period] and lands on a multiple of the period', () => {
  for (const [now, period, want] of [[1234.5, 20, 5.5], [1240, 20, 20], [0.25, 20, 19.75], [99.999, 33, 99 + 33 - 99.999]] as const) {
    const d = renewGridDelayMs(now, period);
    assert.ok(Math.abs(d - want) < 1e-9, `now ${now} period ${period}: ${d}, want ${want}`);
    assert.ok(d > 0 && d <= period);
    const at = now + d;
    assert.ok(Math.abs(at / period - Math.round(at / period)) < 1e-9, `${at} is on the ${period} ms grid`);
  }
});

/** Timers that only record what was asked of them; the test fires them. */
class RecordingTimers implements Timers {
  readonly asked: { kind: 'timeout' | 'interval'; ms: number; fn: () => void; cleared: boolean }[] = [];
  private add(kind: 'timeout' | 'interval', fn: () => void, ms: number): TimerHandle {
    const t = { kind, ms, fn, cleared: false, unref: () => h };
    const h: TimerHandle = t as unknown as TimerHandle;
    this.asked.push(t);
    return h;
  }
  setTimeout = (fn: () => void, ms: number) => this.add('timeout', fn, ms);
  setInterval = (fn: () => void, ms: number) => this.add('interval', fn, ms);
  clearTimeout = (t: TimerHandle | undefined) => void (t && ((t as unknown as { cleared: boolean }).cleared = true));
  clearInterval = (t: TimerHandle | undefined) => this.clearTimeout(t);
  setImmediate = (fn: () => void) => void fn;
}

test('two clients started at different instants tick at the same instants, every period', () => {
  const never: DialManager = () => ({ socket: { on: () => undefined, write: () => true, destroy: () => undefined } as LeaseSocket, ready: 'connect' });
  const log = createLogger('silent');
  const clock = new ManualClock(1000.3);
  const fireTimes: number[][] = [];
  for (const startAt of [1000.3, 1007.9]) {
    clock.advance(startAt - clock.now());
    const timers = new RecordingTimers();
    const ticks: number[] = [];
    const client = new LeaseClient([{ host: '127.0.0.1', port: 1 }], 0, {} as ConfigCell, clock, log, { tick: () => ticks.push(clock.now()) }, false, null, null, 500, { timers, dial: never, follow: () => {} });
    client.start();
    // The renew timer (the link's own timers -- the connect timeout -- are longer than the period).
    const first = timers.asked.find((t) => t.kind === 'timeout' && !t.cleared && t.ms <= 10);
    assert.ok(first && first.ms > 0, 'the first tick within one period (firstRenewMs 10)');
    clock.advance(first.ms);
    first.fn();
    const every = timers.asked.find((t) => t.kind === 'interval' && !t.cleared && t.ms <= 10)!;
    assert.equal(every.ms, 10, 'then every period');
    for (let i = 0; i < 3; i++) {
      clock.advance(every.ms);
      every.fn();
    }
    client.stop();
    fireTimes.push(ticks.map((t) => +t.toFixed(6)));
  }
  assert.deepEqual(fireTimes[0], [1010, 1020, 1030, 1040]);
  assert.deepEqual(fireTimes[1], [1010, 1020, 1030, 1040], 'the later client ticks on the same grid');
});
