// The id table (config/base/ids.ts): owner ids never collide within a role, for every node id the
// cluster configuration accepts and the most actors a node may run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ACTORS_PER_ROLE_MAX, NODE_ID_MAX, RECOVERY_LOG_OWNER, OWNER_ID_MAX, actorOwner, backupLogOwner, blogOwner, remoteRegionOwner, tlogOwner,
} from '../../../../config/base/ids.js';
import { OwnerRole } from '../../../../shm/pool-layout.js';
import { defaultLimits } from '../../../../config/limits.js';
import { INFLIGHT_WORKERS_MAX } from '../../../../actors/shared/gc-state.js';
import { planCluster } from '../../../../config/cluster.js';
import { ErrorCodes } from '../../../../config/base/errors.js';

test('owner ids are unique per role for node ids 0..NODE_ID_MAX and the maximum actors per role', () => {
  // Everything one node's pool can hold: its own logs, and the remote regions of every other node.
  const byRole = new Map<number, Map<number, string>>();
  const claim = (role: number, owner: number, what: string) => {
    assert.ok(Number.isInteger(owner) && owner >= 0 && owner <= OWNER_ID_MAX, `${what}: owner ${owner} outside the field`);
    const m = byRole.get(role) ?? new Map<number, string>();
    byRole.set(role, m);
    assert.equal(m.get(owner), undefined, `${what} and ${m.get(owner)} share owner id ${owner} of role ${role}`);
    m.set(owner, what);
  };
  for (let a = 0; a < ACTORS_PER_ROLE_MAX; a++) {
    claim(OwnerRole.Worker, tlogOwner(a), `t-log of worker ${a}`);
    claim(OwnerRole.Worker, backupLogOwner(a), `backup log of worker ${a}`);
    claim(OwnerRole.Control, blogOwner(a), `b-log of control ${a}`);
    claim(OwnerRole.Digest, actorOwner(a), `digest log ${a}`);
    claim(OwnerRole.Clean, actorOwner(a), `clean log ${a}`);
  }
  claim(OwnerRole.Digest, RECOVERY_LOG_OWNER, 'the recovery log');
  for (let n = 0; n <= NODE_ID_MAX; n++) claim(OwnerRole.Remote, remoteRegionOwner(n), `regions of node ${n}`);
  assert.equal(byRole.get(OwnerRole.Remote)!.size, NODE_ID_MAX + 1);
});

test('ids outside the table are refused, not wrapped', () => {
  assert.throws(() => tlogOwner(ACTORS_PER_ROLE_MAX));
  assert.throws(() => backupLogOwner(-1));
  assert.throws(() => remoteRegionOwner(NODE_ID_MAX + 1));
  assert.throws(() => actorOwner(1.5));
});

test('the limits that several modules use agree with the table', () => {
  assert.equal(defaultLimits.actorsPerRoleMax, ACTORS_PER_ROLE_MAX);
  assert.equal(INFLIGHT_WORKERS_MAX, ACTORS_PER_ROLE_MAX);
});

test('the cluster configuration accepts node ids up to NODE_ID_MAX and refuses the next one', () => {
  const plan = (ids: number[]) =>
    planCluster({
      nodes: ids.map((id, i) => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [20000 + i], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
      shardCount: 4,
      replicationFactor: 3,
    });
  assert.doesNotThrow(() => plan([0, 512, NODE_ID_MAX]));
  assert.throws(() => plan([0, 1, NODE_ID_MAX + 1]), (e: { code?: string }) => e.code === ErrorCodes.BAD_CONFIG);
});
