// When an actor's periodic duty runs (runtime/tick-schedule.ts): every base period while it works, a
// doubling wait up to the idle bound while it reports idle, back to the base period at once when work
// appears (wake), and never two ticks overlapping.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../config/base/clock.js';
import { TickSchedule, type TickResult } from '../../../runtime/tick-schedule.js';
import { StepTimers } from '../../fixtures/step-timers.js';

function harness(baseMs: number, idleMaxMs: number, report: () => TickResult) {
  const timers = new StepTimers(new ManualClock(0));
  const at: number[] = [];
  const s: TickSchedule = new TickSchedule(baseMs, idleMaxMs, () => {
    at.push(timers.clock.now());
    s.began();
    s.ended(report());
  }, timers);
  return { s, timers, at };
}

test('idle ticks double the wait up to the bound; a busy one brings the base period back', () => {
  let r: TickResult = 'idle';
  const { s, timers, at } = harness(5, 200, () => r);
  s.start();
  timers.advance(600);
  // 5, then waits of 10, 20, 40, 80, 160, 200, 200 ...
  assert.deepEqual(at.slice(0, 7), [5, 15, 35, 75, 155, 315, 515]);
  assert.equal(s.periodMs, 200);
  r = undefined; // the next tick works
  const before = at.length;
  timers.advance(timers.armed()[0]! - timers.clock.now());
  assert.equal(at.length - before, 1, 'one tick at the stretched wait');
  assert.equal(s.periodMs, 5, 'then the base period');
  timers.advance(50);
  assert.equal(at.length - before, 1 + 10);
});

test('wake() while stretched ticks within one base period; while not stretched it changes nothing', () => {
  const { s, timers, at } = harness(5, 200, () => 'idle');
  s.start();
  timers.advance(400);
  assert.equal(s.periodMs, 200);
  const n = at.length;
  s.wake();
  timers.advance(5);
  assert.equal(at.length, n + 1, 'ticked 5 ms after the wake');
  assert.equal(s.periodMs, 10, 'and that idle tick doubles from the base period again');
  s.wake(); // a 10 ms wait is stretched too: re-armed at the base period
  assert.deepEqual(timers.armed(), [timers.clock.now() + 5]);
  timers.advance(5);
  s.began();
  s.ended(undefined);
  const armed = timers.armed();
  s.wake(); // at the base period: nothing to change
  assert.deepEqual(timers.armed(), armed);
});

test('a wake during a running tick wins over its idle report; { inMs } is clamped to [base, bound]', () => {
  const timers = new StepTimers(new ManualClock(0));
  let result: TickResult = 'idle';
  let wakeInside = false;
  const at: number[] = [];
  const s: TickSchedule = new TickSchedule(5, 100, () => {
    at.push(timers.clock.now());
    s.began();
    if (wakeInside) s.wake();
    s.ended(result);
  }, timers);
  s.start();
  timers.advance(100); // stretched
  wakeInside = true;
  const n = at.length;
  timers.advance(s.periodMs);
  assert.equal(s.periodMs, 5, 'woken while running: the base period, not a doubling');
  wakeInside = false;
  result = { inMs: 37 };
  timers.advance(5);
  assert.equal(s.periodMs, 37);
  result = { inMs: 1 };
  timers.advance(37);
  assert.equal(s.periodMs, 5, 'never below the base period');
  result = { inMs: Infinity };
  timers.advance(5);
  assert.equal(s.periodMs, 100, 'never above the bound');
  assert.ok(at.length > n);
});

test('stop() cancels the armed tick and a later wake() re-arms nothing; bad periods are refused', () => {
  const { s, timers, at } = harness(5, 50, () => 'idle');
  s.start();
  timers.advance(100);
  s.stop();
  const n = at.length;
  s.wake();
  timers.advance(1000);
  assert.equal(at.length, n);
  assert.deepEqual(timers.armed(), []);
  assert.throws(() => new TickSchedule(0, 10, () => {}, timers), RangeError);
  assert.throws(() => new TickSchedule(10, 5, () => {}, timers), RangeError);
});

test('with a clock, idle ticks fall on the bound\'s grid: two actors started apart tick together once idle', () => {
  const timers = new StepTimers(new ManualClock(0));
  const at: number[][] = [[], []];
  const make = (i: number): TickSchedule => {
    const s: TickSchedule = new TickSchedule(5, 200, () => {
      at[i]!.push(timers.clock.now());
      s.began();
      s.ended('idle');
    }, timers, timers.clock);
    return s;
  };
  const a = make(0);
  a.start();
  timers.advance(37);
  const b = make(1);
  b.start();
  timers.advance(2000);
  // Stretching doubles as before (5, 10, ... 160) and the first wait at the bound ends on the grid.
  assert.deepEqual(at[0]!.slice(0, 6), [5, 15, 35, 75, 155, 315]);
  const late = (xs: number[]) => xs.filter((t) => t >= 1000);
  assert.ok(late(at[0]!).length >= 4 && late(at[0]!).every((t) => t % 200 === 0), `a on the grid: ${late(at[0]!).join(', ')}`);
  assert.deepEqual(late(at[1]!), late(at[0]!), 'b ticks at the same instants');
  // A wake still ticks within one base period, off the grid.
  a.wake();
  const n = at[0]!.length;
  timers.advance(5);
  assert.equal(at[0]!.length, n + 1);
  assert.notEqual(at[0]!.at(-1)! % 200, 0);
});
