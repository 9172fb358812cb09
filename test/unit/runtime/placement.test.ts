import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKGROUND_THREAD, MAIN, placeActors, sharesThreads, threadsOf, wireActors } from '../../../runtime/placement.js';
import { launchedRoles } from '../../../bin/cluster-launcher.js';

test('actors get one core each, round-robin over the node cores, in listed order', () => {
  const plans = placeActors(
    [
      { role: 'worker', count: 2 },
      { role: 'control', count: 1 },
      { role: 'digest', count: 2, cores: [0, 1] },
      { role: 'clean', count: 1 },
    ],
    [0, 1],
  );
  assert.deepEqual(
    plans.map((p) => [p.name, p.cores]),
    [
      ['worker.0', [0]],
      ['worker.1', [1]],
      ['control.0', [0]],
      ['digest.0', [0, 1]],
      ['digest.1', [0, 1]],
      ['clean.0', [1]],
    ],
  );
});

test('rings: main <-> every actor, control -> each digest, each digest -> each clean', () => {
  const plans = placeActors(
    [
      { role: 'control', count: 1 },
      { role: 'digest', count: 2 },
      { role: 'clean', count: 2 },
      { role: 'worker', count: 1 },
    ],
    [0],
  );
  const w = wireActors(plans, 64);
  const pairs = w.links.map((l) => `${l.from}>${l.to}`);
  for (const p of plans) assert.ok(pairs.includes(`${MAIN}>${p.name}`) && pairs.includes(`${p.name}>${MAIN}`));
  for (const d of ['digest.0', 'digest.1']) {
    assert.ok(pairs.includes(`control.0>${d}`));
    for (const c of ['clean.0', 'clean.1']) assert.ok(pairs.includes(`${d}>${c}`));
  }
  assert.equal(w.links.length, 2 * plans.length + 2 + 4);
  assert.equal(new Set(pairs).size, pairs.length, 'one ring per directed pair');
  assert.deepEqual(
    w.outbound('control.0').map((o) => [o.to, o.toRole]),
    [[MAIN, MAIN], ['digest.0', 'digest'], ['digest.1', 'digest']],
  );
  assert.equal(w.outbound('digest.1').find((o) => o.to === 'clean.0')!.doorbell, w.bells.get('clean.0')!.sab);
  assert.deepEqual(w.inbound('clean.1').map((i) => i.from), [MAIN, 'digest.0', 'digest.1']);
});

test('threads: shared co-hosts the background roles on one thread and core; workers and @cpus keep their own', () => {
  const roles = [
    { role: 'worker' as const, count: 2 },
    { role: 'control' as const, count: 1 },
    { role: 'digest' as const, count: 2 },
    { role: 'clean' as const, count: 1, cores: [1] },
    { role: 'nic' as const, count: 1 },
  ];
  const plans = placeActors(roles, [0, 1, 2], 'shared');
  assert.deepEqual(
    plans.map((p) => [p.name, p.thread, p.cores]),
    [
      ['worker.0', 'worker.0', [0]],
      ['worker.1', 'worker.1', [2]],
      ['control.0', BACKGROUND_THREAD, [0]],
      ['digest.0', BACKGROUND_THREAD, [0]],
      ['digest.1', 'digest.1', [2]], // a role module holds one actor: the second digest has its own
      ['clean.0', 'clean.0', [1]],
      ['nic.0', BACKGROUND_THREAD, [0]],
    ],
  );
  assert.deepEqual([...threadsOf(plans).keys()], ['worker.0', 'worker.1', BACKGROUND_THREAD, 'digest.1', 'clean.0']);
  assert.deepEqual(
    placeActors(roles, [0, 1, 2], 'dedicated').map((p) => p.thread),
    ['worker.0', 'worker.1', 'control.0', 'digest.0', 'digest.1', 'clean.0', 'nic.0'],
  );
});

test('threads: auto shares only when the node has fewer cores than actors', () => {
  const roles = [
    { role: 'worker' as const, count: 1 },
    { role: 'control' as const, count: 1 },
    { role: 'digest' as const, count: 1 },
    { role: 'clean' as const, count: 1 },
  ];
  assert.equal(sharesThreads(roles, [0, 1, 2, 3], 'auto'), false);
  assert.equal(sharesThreads(roles, [0, 1, 2], 'auto'), true);
  assert.equal(sharesThreads(roles, [0, 1, 2, 3], 'shared'), true);
  assert.equal(sharesThreads(roles, [0], 'dedicated'), false);
  assert.equal(new Set(placeActors(roles, [0, 1], 'auto').map((p) => p.thread)).size, 2);
  assert.equal(new Set(placeActors(roles, [0, 1, 2, 3], 'auto').map((p) => p.thread)).size, 4);
});

test("the round-robin skips cores a role names with @cpus, so rowan cluster's pinned workers spread", () => {
  const on = (workerCore: number) =>
    placeActors([{ role: 'worker', count: 1, cores: [workerCore] }, { role: 'control', count: 1 }, { role: 'digest', count: 1 }, { role: 'clean', count: 1 }], [0, 1], 'shared').map((p) => [p.name, p.cores[0]]);
  assert.deepEqual(on(0), [['worker.0', 0], ['control.0', 1], ['digest.0', 1], ['clean.0', 1]]);
  assert.deepEqual(on(1), [['worker.0', 1], ['control.0', 0], ['digest.0', 0], ['clean.0', 0]]);
  assert.deepEqual(launchedRoles(0, 1, [0, 1]), 'worker:1@0,control,digest,clean,migration');
  assert.deepEqual(launchedRoles(1, 1, [0, 1]), 'worker:1@1,control,digest,clean,migration');
  assert.deepEqual(launchedRoles(2, 1, [0, 1]), 'worker:1@0,control,digest,clean,migration');
  assert.deepEqual(launchedRoles(1, 2, [0, 1]), 'worker:2,control,digest,clean,migration', 'several workers: the round-robin spreads them');
  assert.deepEqual(launchedRoles(1, 1, [3]), 'worker:1,control,digest,clean,migration', 'one CPU: nothing to spread');
});
