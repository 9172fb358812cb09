// The lease thread's own poll loop (actors/node/lease-reactor.ts): the Timers and the connections the
// lease client runs on when it has no event loop. The loop blocks the test's thread, so the peers (an
// echo server, a thread signalling the wake fd) run on threads of their own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { Worker } from 'node:worker_threads';
import { monotonicClock } from '../../../../config/base/clock.js';
import { LeaseReactor, reactorCanDial } from '../../../../actors/node/lease-reactor.js';
import { closeFd, openEventFd } from '../../../../native/nonblocking-tcp.js';

/** An echo server on a thread of its own (the reactor blocks this one); posts its port. */
const ECHO = `
const { parentPort } = require('node:worker_threads');
const server = require('node:net').createServer((s) => { s.on('data', (d) => s.write(d)); s.on('error', () => {}); });
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
`;

/** Signals the eventfd (through the same native module) after a delay, from another thread. */
const SIGNAL = (fd: number, ms: number, url: string) => `
import(${JSON.stringify(url)}).then((m) => setTimeout(() => m.signalEventFd(${fd}), ${ms}));
`;

test('timers run at their time, intervals repeat, cleared ones never run, immediates after the current callback', () => {
  const wake = openEventFd();
  try {
    const r = new LeaseReactor(monotonicClock, wake, () => {});
    const seen: string[] = [];
    const t0 = monotonicClock.now();
    let ticks = 0;
    const every = r.setInterval(() => {
      ticks++;
      seen.push(`tick${ticks}`);
    }, 10);
    const never = r.setTimeout(() => seen.push('never'), 15);
    r.setTimeout(() => seen.push('once'), 25);
    r.clearTimeout(never);
    r.setTimeout(() => {
      r.clearInterval(every);
      r.setImmediate(() => {
        seen.push('immediate');
        r.stop();
      });
    }, 45);
    r.run();
    const ms = monotonicClock.now() - t0;
    // Late wakeups (a busy machine) skip ticks rather than make them up: at most 4 in 45 ms.
    assert.ok(ticks >= 1 && ticks <= 4, `${ticks} ticks`);
    assert.deepEqual(seen.filter((s) => !s.startsWith('tick')), ['once', 'immediate']);
    assert.equal(seen.at(-1), 'immediate');
    assert.ok(seen.indexOf('tick1') < seen.indexOf('once'), 'the interval (10 ms) ran before the 25 ms timeout');
    assert.ok(ms >= 45, `stopped after ${ms.toFixed(1)} ms, not before the last timer`);
  } finally {
    closeFd(wake);
  }
});

test('a connection: connect, write, the echo comes back as data, destroy closes it', async () => {
  const echo = new Worker(ECHO, { eval: true });
  const wake = openEventFd();
  try {
    const port = await new Promise<number>((resolve) => echo.once('message', resolve));
    const r = new LeaseReactor(monotonicClock, wake, () => {});
    const events: string[] = [];
    let got = '';
    const { socket, ready } = r.dial({ host: '127.0.0.1', port, noDelay: true }, null);
    socket.on(ready, () => {
      events.push('connect');
      socket.write('hello ');
      socket.write(Buffer.from('world'));
    });
    socket.on('data', (b: Buffer) => {
      got += b.toString();
      if (got === 'hello world') socket.destroy();
    });
    socket.on('close', () => {
      events.push('close');
      r.stop();
    });
    r.setTimeout(() => r.stop(), 10_000); // a hung test ends here, failing below
    r.run();
    assert.equal(got, 'hello world');
    assert.deepEqual(events, ['connect', 'close']);
  } finally {
    closeFd(wake);
    await echo.terminate();
  }
});

test('a refused connect is an error then a close, never a connect', async () => {
  const wake = openEventFd();
  // A port nobody listens on: take one, then close it.
  const free = createServer();
  const port = await new Promise<number>((resolve) => free.listen(0, '127.0.0.1', () => resolve((free.address() as { port: number }).port)));
  await new Promise<void>((resolve) => free.close(() => resolve()));
  try {
    const r = new LeaseReactor(monotonicClock, wake, () => {});
    const events: string[] = [];
    const { socket, ready } = r.dial({ host: '127.0.0.1', port, noDelay: true }, null);
    socket.on(ready, () => events.push('connect'));
    socket.on('error', () => events.push('error'));
    socket.on('close', () => {
      events.push('close');
      r.stop();
    });
    r.setTimeout(() => r.stop(), 10_000);
    r.run();
    assert.deepEqual(events, ['error', 'close']);
  } finally {
    closeFd(wake);
  }
});

test('another thread signalling the wake fd wakes the loop at once (no timer pending)', async () => {
  const wake = openEventFd();
  const url = new URL('../../../../native/nonblocking-tcp.js', import.meta.url).href;
  const signaller = new Worker(SIGNAL(wake, 50, url), { eval: true });
  try {
    let woken = 0;
    const r = new LeaseReactor(monotonicClock, wake, () => {
      woken++;
      r.stop();
    });
    const t0 = monotonicClock.now();
    r.run(); // no timer: without the signal this would block forever
    assert.equal(woken, 1);
    assert.ok(monotonicClock.now() - t0 >= 40);
  } finally {
    await signaller.terminate();
    closeFd(wake);
  }
});

test('only plain TCP to IPv4 addresses is carried by the reactor (TLS and host names keep the event loop)', () => {
  assert.equal(reactorCanDial([{ host: '127.0.0.1' }, { host: '10.0.0.2' }], null), true);
  assert.equal(reactorCanDial([{ host: '127.0.0.1' }], { ca: 'x' }), false);
  assert.equal(reactorCanDial([{ host: 'localhost' }], null), false);
});
