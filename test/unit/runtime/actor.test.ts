import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { defaultConfig } from '../../../config/defaults.js';
import { schedGetaffinity } from '../../../native/libc.js';
import { spawnActor, spawnThread, type ActorHandle } from '../../../runtime/actor.js';
import { RowanError } from '../../../config/base/errors.js';
import { createCounters, readCounters } from '../../../shm/counters.js';
import { Doorbell, Inbox, Outbox, RecordKind } from '../../../shm/mailbox.js';
import { Ring } from '../../../shm/ring.js';
import { eventually } from '../../fixtures/eventually.js';

const allowed = schedGetaffinity(0);
const lastCpu = allowed[allowed.length - 1]!;
// Worker and clean stand in for any role: they need nothing at init (control and digest map the pool).
const roleEntry = (role: string) => new URL(`../../../actors/${role}/thread.js`, import.meta.url);
const cleanEntry = roleEntry('clean');
const fixture = (name: string) => new URL(`../../fixtures/${name}.js`, import.meta.url);

function setup(entry: URL, cores: number[], role = 'clean') {
  const config = defaultConfig('/nonexistent', allowed);
  config.logLevel = 'silent';
  const toActor = Ring.create(256);
  const fromActor = Ring.create(256);
  const actorBell = new Doorbell();
  const mainBell = new Doorbell();
  const counters = createCounters();
  const spec = {
    entry,
    readyTimeoutMs: 10_000,
    start: {
      role, id: 0, name: `${role}.0`, cores, config, counters, secret: null,
      doorbell: actorBell.sab,
      inbound: [{ from: 'main', ring: toActor.handle }],
      outbound: [{ to: 'main', toRole: 'main', ring: fromActor.handle, doorbell: mainBell.sab }],
    },
  };
  return {
    spec, counters,
    out: new Outbox(`${role}.0`, toActor, actorBell),
    inbox: new Inbox([{ from: `${role}.0`, ring: fromActor }], mainBell),
  };
}

/** Kernel view of a thread's CPU list, independent of our own binding. */
function procCpus(tid: number): string {
  const status = readFileSync(`/proc/self/task/${tid}/status`, 'utf8');
  return /Cpus_allowed_list:\s*(\S+)/.exec(status)![1]!;
}

/** utime + stime of one thread, in clock ticks. */
function threadCpuTicks(tid: number): number {
  const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

test('an actor pins its own thread, not the process, and READY reports what the kernel says', async () => {
  const s = setup(cleanEntry, [lastCpu]);
  const h = await spawnActor(s.spec);
  try {
    assert.deepEqual(h.ready!.cpus, [lastCpu], 'read back with sched_getaffinity inside the thread');
    assert.equal(h.ready!.cpu, lastCpu);
    assert.deepEqual(schedGetaffinity(h.ready!.tid), [lastCpu], 'the same tid, asked from another thread');
    assert.equal(procCpus(h.ready!.tid), String(lastCpu), '/proc agrees');
    assert.deepEqual(schedGetaffinity(0), allowed, "the main thread's mask is untouched");
    assert.equal(procCpus(process.pid), allowed.length > 1 ? `${allowed[0]}-${lastCpu}` : String(lastCpu));
    assert.equal(readCounters(s.counters).state, 'ready');
    assert.equal(readCounters(s.counters).tid, h.ready!.tid);
  } finally {
    await h.stop(5000);
  }
});

test('a ping through the rings comes back as a pong, and the actor stops and exits cleanly', async () => {
  const s = setup(roleEntry('worker'), allowed, 'worker');
  const h = await spawnActor(s.spec);
  assert.equal(s.out.send({ kind: RecordKind.PING, seq: 41 }), true);
  let pong: number | undefined;
  for (let i = 0; i < 200 && pong === undefined; i++) {
    s.inbox.drain((m) => m.kind === RecordKind.PONG && (pong = m.seq));
    if (pong === undefined) await sleep(5);
  }
  assert.equal(pong, 41);
  // The worker's periodic tick (15 ms CommitVer period) has run: wait for its published count rather
  // than sleeping a guess (a loaded machine can delay the first tick past any fixed pause).
  await eventually(() => assert.ok(readCounters(s.counters).counts.TICKS > 0, 'worker ran its periodic tick'), 30_000, 5);
  assert.equal(await h.stop(5000), 'stopped');
  assert.equal(await h.exited, 0);
  const c = readCounters(s.counters);
  assert.equal(c.state, 'stopped');
  assert.equal(c.counts.PINGS, 1);
  assert.ok(c.counts.TICKS > 0, 'worker ran its periodic tick');
});

test('an idle actor sleeps on its doorbell instead of spinning', async () => {
  // clean has no tick: with no ring traffic it should not run at all.
  const s = setup(cleanEntry, [lastCpu]);
  const h = await spawnActor(s.spec);
  try {
    await sleep(100);
    const before = threadCpuTicks(h.ready!.tid);
    await sleep(500);
    const used = threadCpuTicks(h.ready!.tid) - before;
    assert.ok(used <= 3, `idle actor used ${used} clock ticks in 500 ms (a spinning one uses ~50)`);
  } finally {
    await h.stop(5000);
  }
});

test('an actor that throws reports {code, message} and its thread is ended', async () => {
  const s = setup(fixture('throwing-actor'), allowed);
  const h: ActorHandle = await spawnActor(s.spec);
  const err = await new Promise<RowanError>((r) => h.once('failed', r));
  assert.ok(err instanceof RowanError);
  assert.equal(err.code, 'ROWAN_ERR_PM_FULL');
  assert.match(err.message, /third tick/);
  assert.equal(await h.exited, 1, 'terminated by the supervisor side');
  assert.equal(readCounters(s.counters).state, 'failed');
});

test('an actor failing in init makes spawnActor reject with its code and leaves no thread', async () => {
  const s = setup(fixture('failing-init-actor'), allowed);
  const threadsBefore = readdirSync('/proc/self/task').length;
  await assert.rejects(spawnActor(s.spec), { code: 'ROWAN_ERR_INDEX_FULL' });
  assert.ok(readdirSync('/proc/self/task').length <= threadsBefore, 'the failed actor thread is gone');
});

test('pinning to a CPU the process may not use fails with ROWAN_ERR_AFFINITY', async () => {
  const s = setup(cleanEntry, [1000]);
  await assert.rejects(spawnActor(s.spec), { code: 'ROWAN_ERR_AFFINITY' });
});

/** Send a PING on `s`'s ring and wait for its PONG. */
async function pingPong(s: ReturnType<typeof setup>, seq: number): Promise<void> {
  assert.equal(s.out.send({ kind: RecordKind.PING, seq }), true);
  await eventually(() => {
    let pong: number | undefined;
    s.inbox.drain((m) => m.kind === RecordKind.PONG && (pong = m.seq));
    assert.equal(pong, seq);
  }, 30_000, 5);
}

test('actors sharing a thread: one tid and core, each its own rings and lifecycle; the thread ends with the last', async () => {
  const w = setup(roleEntry('worker'), [lastCpu], 'worker');
  const c = setup(cleanEntry, [lastCpu]);
  const threadsBefore = readdirSync('/proc/self/task').length;
  const [hw, hc] = await spawnThread([w.spec, c.spec], 'background');
  assert.equal(hw!.ready!.tid, hc!.ready!.tid, 'one thread');
  assert.deepEqual([hw!.thread, hc!.thread], ['background', 'background']);
  assert.equal(readdirSync('/proc/self/task').length, threadsBefore + 1);
  assert.deepEqual(schedGetaffinity(hw!.ready!.tid), [lastCpu]);
  await pingPong(w, 7);
  await pingPong(c, 8);
  assert.equal(await hc!.stop(5000), 'stopped');
  assert.equal(await hc!.exited, 0);
  assert.equal(readCounters(c.counters).state, 'stopped');
  await pingPong(w, 9); // its neighbour stopped; it still runs
  assert.equal(await hw!.stop(5000), 'stopped');
  assert.equal(await hw!.exited, 0);
  await eventually(() => assert.equal(readdirSync('/proc/self/task').length, threadsBefore, 'the thread exited by itself'), 30_000, 10);
});

test('an actor failing on a shared thread takes the actors it shares it with down too', async () => {
  const bad = setup(fixture('throwing-actor'), allowed, 'digest');
  const mate = setup(cleanEntry, allowed);
  const [hb, hm] = await spawnThread([bad.spec, mate.spec], 'background');
  const [errBad, errMate] = await Promise.all([hb!, hm!].map((h) => new Promise<RowanError>((r) => h.once('failed', r))));
  assert.equal(errBad!.code, 'ROWAN_ERR_PM_FULL');
  assert.equal(errMate!.code, 'ROWAN_ERR_ACTOR_FAILED');
  assert.match(errMate!.message, /clean\.0 exited unexpectedly/);
  assert.equal(await hm!.exited, 1);
});
