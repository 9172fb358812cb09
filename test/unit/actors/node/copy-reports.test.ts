// The migration actor's copy reports (actors/shared/copy-reports.ts) and the main thread's reporter
// (actors/node/copy-reports.ts): a finished copy is sent to the manager at once, again only after
// catchUpResendMs while the configuration still marks the node catching up from that primary, and
// never for a shard being copied again or no longer marked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster } from '../../../../config/cluster.js';
import { defaultTimings } from '../../../../config/timings.js';
import { ConfigCell } from '../../../../actors/shared/config-cell.js';
import { CopyReports, CopyState } from '../../../../actors/shared/copy-reports.js';
import { CopyReporter } from '../../../../actors/node/copy-reports.js';
import { planCopies } from '../../../../actors/manager/copy-moves.js';
import type { NodeToManager } from '../../../../actors/shared/manager-protocol.js';

test('a finished copy is reported at once, again after the resend period while still marked, not while copying again', () => {
  const nodes = Array.from({ length: 4 }, (_, id) => ({ id, host: '127.0.0.1', dataDir: `/d/${id}`, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } }));
  const c1 = planCluster({ nodes, shardCount: 4, replicationFactor: 3 });
  const s = c1.shards[0]!;
  const to = [0, 1, 2, 3].find((n) => n !== s.primary && !s.backups.includes(n))!;
  const c2 = planCopies(c1, [{ shard: 0, from: s.primary, to }]);
  const clock = new ManualClock();
  const cell = ConfigCell.create(c2, false, clock);
  const reports = CopyReports.create(c2.shardCount);
  const sent: NodeToManager[] = [];
  const r = new CopyReporter(to, cell, CopyReports.attach(reports.buffer, c2.shardCount), clock, (m) => sent.push(m));
  assert.deepEqual(r.look(), []);
  reports.copying(0);
  assert.equal(reports.state(0), CopyState.COPYING);
  assert.deepEqual(r.look(), []);
  reports.caughtUp(0, { term: c2.term, from: s.primary, entries: 10, bytes: 1000, ms: 5, absorbed: 10 });
  assert.deepEqual(r.look(), [0]);
  assert.deepEqual(sent[0], { t: 'caughtUp', node: to, term: c2.term, shard: 0, from: s.primary, entries: 10, bytes: 1000, absorbed: 10, ms: 5 });
  assert.deepEqual(r.look(), [], 'not again before the resend period');
  clock.advance(defaultTimings.catchUpResendMs);
  assert.deepEqual(r.look(), [0], 'again once the period passed, the mark still there');
  reports.copying(0); // the primary moved: copying again
  clock.advance(defaultTimings.catchUpResendMs);
  assert.deepEqual(r.look(), []);
  reports.clear(0);
  assert.equal(reports.read(0), null);
  assert.equal(sent.length, 2);
});
