// A backup whose pool is full refuses a replicated entry with PM_FULL (or QUOTA). When every backup
// refused it, the entry is only in the primary's t-log, recorded there as a failed write, so "not
// applied" (Redis's OOM) is the truth. When another backup took it, a failover can promote that backup
// and serve the entry: the reply must then say "outcome unknown", not "not applied" (issue 27).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planCluster } from '../../../../config/cluster.js';
import { shardOfKey } from '../../../../config/slots.js';
import { defaultLimits } from '../../../../config/limits.js';
import { ErrorCodes, RowanError } from '../../../../config/base/errors.js';
import { attachKvShared, createKvShared } from '../../../../actors/shared/node-shared.js';
import { KvWorker } from '../../../../actors/worker/kv.js';
import { isNotApplied } from '../../../../actors/worker/resp/outcome.js';
import { OwnerRole, Pool } from '../../../../shm/pool.js';
import { TLog } from '../../../../shm/tlog.js';

const enc = (s: string) => new TextEncoder().encode(s);

/** A primary (node 0) whose backups answer as `full` says: true = that backup's pool is full. */
function primaryWith(dir: string, full: (node: number) => boolean): { worker: KvWorker; key: Uint8Array; close(): void } {
  const cluster = planCluster({
    nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: join(dir, `n${id}`), workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
    shardCount: 6,
    replicationFactor: 3,
  });
  const pool = Pool.create(join(dir, 'pool.pm'), { segmentCount: 16, segmentBytes: 256 * 1024 });
  const worker = new KvWorker({
    nodeId: 0,
    config: () => cluster,
    region: pool.region,
    tlog: new TLog(pool, 0, defaultLimits, OwnerRole.Worker),
    shared: attachKvShared(createKvShared(cluster, 0, 1024)),
    replica: async (node) => ({
      write: async (b: Uint8Array) => {
        if (full(node)) throw new RowanError(ErrorCodes.PM_FULL, `node ${node}: no receive buffer: the pool has no free segment`);
        return b.length;
      },
    }),
    limits: defaultLimits,
  });
  let key = enc('k0');
  for (let i = 0; cluster.shards[shardOfKey(key, cluster.shardCount)]!.primary !== 0; i++) key = enc(`k${i}`);
  return { worker, key, close: () => pool.close() };
}

test('every backup full: PM_FULL, a "not applied" reply (OOM), and the key keeps its value', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-backup-full-'));
  const p = primaryWith(dir, () => true);
  try {
    const err = await p.worker.put(p.key, enc('v'), 1).then(() => null, (e: unknown) => e);
    assert.ok(err instanceof RowanError && err.code === ErrorCodes.PM_FULL, String(err));
    assert.ok(isNotApplied(err));
    assert.equal(await p.worker.get(p.key, 1), null);
  } finally {
    p.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('one backup full, the other took the entry: OUTCOME_UNKNOWN naming the full pool, not "not applied"', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-backup-full-'));
  const p = primaryWith(dir, (node) => node === 2);
  try {
    const err = await p.worker.put(p.key, enc('v'), 1).then(() => null, (e: unknown) => e);
    assert.ok(err instanceof RowanError && err.code === ErrorCodes.OUTCOME_UNKNOWN, String(err));
    assert.match(err.message, /node 2.*ROWAN_ERR_PM_FULL/);
    assert.equal(isNotApplied(err), false);
  } finally {
    p.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
