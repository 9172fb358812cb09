// A restarted primary's hold (actors/node/restart-hold.ts) on a real pool file: the shards the node is
// primary of are blocked at cold start; the restart tail is the PUT/DEL entries of those shards in t-log
// segments left Using, above the saved commit point -- not those below it, not those of Committed
// segments, not those of shards it only backs up; a configuration that gives a held shard away lets it
// go (unblocked); a confirmation ends the hold.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { defaultLimits } from '../../../../config/limits.js';
import { ConfigCell } from '../../../../actors/shared/config-cell.js';
import { RestartHold } from '../../../../actors/node/restart-hold.js';
import { EntryType } from '../../../../shm/log.js';
import { OwnerRole, Pool, SegmentState } from '../../../../shm/pool.js';
import { TLog } from '../../../../shm/tlog.js';

function cluster(): ClusterConfig {
  return planCluster({
    nodes: [0, 1].map((id) => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
    shardCount: 4,
    replicationFactor: 2,
  });
}

test('restart hold: held shards are blocked; the tail is what lies above the commit point in Using t-log segments; a move away or a confirmation ends the hold', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-hold-'));
  try {
    const pool = Pool.create(join(dir, 'pool.pm'), { segmentCount: 16, segmentBytes: 64 * 1024, mode: 'pagecache' });
    const c = cluster();
    const mine = c.shards.filter((s) => s.primary === 0).map((s) => s.id);
    const other = c.shards.find((s) => s.primary !== 0)!.id;
    assert.ok(mine.length >= 2);
    const [a, b] = mine as [number, number];
    // An older segment, Committed (every append in it finished), then the segment in use at the crash.
    const old = TLog.recover(pool, 0, defaultLimits);
    old.append({ type: EntryType.Put, shard: a, version: 50, key: Buffer.from('committed'), value: Buffer.from('x') });
    old.seal(); // Committed: nothing pending in it
    const log = TLog.recover(pool, 0, defaultLimits);
    log.append({ type: EntryType.Put, shard: a, version: 9, key: Buffer.from('below'), value: Buffer.from('x') });
    log.append({ type: EntryType.Put, shard: a, version: 11, key: Buffer.from('k1'), value: Buffer.from('v1'), expiresAt: 1_900_000_000_011 });
    log.append({ type: EntryType.Del, shard: b, version: 3, key: Buffer.from('k2') });
    log.append({ type: EntryType.Put, shard: other, version: 99, key: Buffer.from('backup'), value: Buffer.from('x') });
    assert.ok(pool.segments({ role: OwnerRole.Worker }).some((s) => pool.meta(s).state === SegmentState.Committed), 'the older segment is Committed');
    const cell = ConfigCell.create(c, true, new ManualClock(0));
    const hold = RestartHold.atColdStart(pool, cell, c, 0, defaultLimits, new Map([[a, 10]]));
    assert.deepEqual(hold.unconfirmed(c, 0, cell), mine);
    for (const s of mine) assert.equal(cell.shardBlocked(s), true, `shard ${s} waits for the manager`);
    assert.equal(cell.shardBlocked(other), false, 'a shard it only backs up serves (as a backup) at once');
    assert.deepEqual(hold.tailOf(mine).map((e) => [e.s, e.v, e.t]), [[a, 11, EntryType.Put], [b, 3, EntryType.Del]], 'newest first; not below the commit point, not Committed, not a backup shard');
    assert.equal(Buffer.from(hold.tailOf([a])[0]!.x, 'base64').toString(), 'v1');
    assert.equal(hold.tailOf([a])[0]!.e, 1_900_000_000_011, 'the tail keeps the expiry deadline (the union sent to the backups carries it)');
    // A configuration that moved shard b to node 1 while this node was down: b is let go.
    const moved: ClusterConfig = { ...structuredClone(c), term: 2, shards: c.shards.map((s) => (s.id === b ? { ...s, primary: 1, backups: [0] } : s)) };
    assert.deepEqual(hold.unconfirmed(moved, 0, cell), [a]);
    assert.equal(cell.shardBlocked(b), false);
    assert.deepEqual(hold.tailOf([a, b]).map((e) => e.v), [11]);
    hold.confirmed([a]);
    assert.deepEqual(hold.unconfirmed(moved, 0, cell), []);
    assert.deepEqual(hold.tailOf([a]), []);
    pool.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
