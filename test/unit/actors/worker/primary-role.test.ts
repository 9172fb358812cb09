// A primary acknowledges a PUT/DEL only while it still holds the shard's primary role (DESIGN §6, issue
// 24 hazard 2): a configuration committed while the write replicates that gives the shard to another
// node turns the reply into OUTCOME_UNKNOWN (that node's promotion scan may have missed the entry); one
// that keeps this node the shard's primary (another shard moved) does not. One node's pool, its
// configuration cell, and a replication channel the test holds open.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planCluster } from '../../../../config/cluster.js';
import { shardOfKey } from '../../../../config/slots.js';
import { defaultLimits } from '../../../../config/limits.js';
import { ConfigCell } from '../../../../actors/shared/config-cell.js';
import { attachKvShared, createKvShared } from '../../../../actors/shared/node-shared.js';
import { KvWorker } from '../../../../actors/worker/kv.js';
import { clearTasks, planMoves } from '../../../../actors/manager/reshard.js';
import { OwnerRole, Pool } from '../../../../shm/pool.js';
import { TLog } from '../../../../shm/tlog.js';

const enc = (s: string) => new TextEncoder().encode(s);

/** Node 0 of a 3-node cluster: its pool, configuration cell, shared state and worker, whose every
 *  replication write waits until the test calls release() (gate() arms the next wait). */
function setup(name: string) {
  const dir = mkdtempSync(join(tmpdir(), `rowan-${name}-`));
  const cluster = planCluster({
    nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: join(dir, `n${id}`), workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
    shardCount: 6,
    replicationFactor: 3,
  });
  const pool = Pool.create(join(dir, 'pool.pm'), { segmentCount: 16, segmentBytes: 256 * 1024 });
  const cell = ConfigCell.create(cluster, false);
  const shared = attachKvShared(createKvShared(cluster, 0, 1024));
  const h = {
    dir, cluster, pool, cell, shared,
    held: 0,
    release: () => {},
    open: Promise.resolve(),
    gate(): void {
      h.held = 0;
      h.open = new Promise<void>((r) => (h.release = r));
    },
    keyOf: (shard: number) => Array.from({ length: 10_000 }, (_, i) => `k${i}`).find((k) => shardOfKey(enc(k), cluster.shardCount) === shard)!,
    async replicating(): Promise<void> {
      while (h.held === 0) await new Promise((r) => setImmediate(r));
    },
    close(): void {
      h.release();
      pool.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  h.gate();
  const worker = new KvWorker({
    nodeId: 0,
    config: () => cell.config(),
    cell,
    region: pool.region,
    tlog: new TLog(pool, 0, defaultLimits, OwnerRole.Worker),
    shared,
    replica: async () => ({ write: async (b: Uint8Array) => (h.held++, await h.open, b.length) }),
    limits: defaultLimits,
  });
  return { h, worker, cluster, cell, shared };
}

test('a write replicating while its shard passes to another node is not acknowledged; while another shard moves, it is', async () => {
  const { h, cluster, cell, worker } = setup('primary-role');
  const mine = cluster.shards.filter((s) => s.primary === 0).map((s) => s.id);
  const [moving, staying] = [mine[0]!, mine[1]!];
  try {
    // The moving shard passes to node 1 (term 2) while its write replicates.
    const moved = worker.put(enc(h.keyOf(moving)), enc('v1'), 1);
    await h.replicating();
    const term2 = planMoves(cluster, [{ shard: moving, from: 0, to: cluster.shards[moving]!.backups[0]! }]);
    cell.publish(term2);
    h.release();
    await assert.rejects(moved, { code: 'ROWAN_ERR_OUTCOME_UNKNOWN', message: new RegExp(`shard ${moving} passed to node ${term2.shards[moving]!.primary} at term 2`) });
    // This node stays the other shard's primary across term 3: its write is acknowledged.
    h.gate();
    const kept = worker.put(enc(h.keyOf(staying)), enc('v2'), 2);
    await h.replicating();
    cell.publish(clearTasks(term2, [moving]));
    h.release();
    await kept;
    assert.equal(new TextDecoder().decode((await worker.get(enc(h.keyOf(staying)), 3))!), 'v2');
  } finally {
    h.close();
  }
});

// A write is refused WRONG_SHARD ("not applied", which the RESP ports run again: resp/reroute.ts) only
// before anything was written: a shard whose index goes while its write replicates leaves the write
// on the backups, so the reply is outcome-unknown.
test('a write replicating while its shard leaves the node is outcome-unknown, not WRONG_SHARD', async () => {
  const { h, cluster, shared, worker } = setup('primary-gone');
  const shard = cluster.shards.find((s) => s.primary === 0)!.id;
  try {
    const put = worker.put(enc(h.keyOf(shard)), enc('v1'), 1);
    await h.replicating();
    shared.indexes[shard] = null;
    h.release();
    await assert.rejects(put, { code: 'ROWAN_ERR_OUTCOME_UNKNOWN', message: new RegExp(`shard ${shard} left this node while its write was replicating`) });
  } finally {
    h.close();
  }
});
