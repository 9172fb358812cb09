// A copy from a primary of an older build (a rolling upgrade, issue 28): such a primary knows walk v1
// and v2 requests only and refuses a walk v3 (packed) request as malformed. The new backup's migration
// actor (actors/migration/copy.ts) then asks it for v2 batches and copies the whole shard, its
// pipelined bucket ranges and all, instead of retrying the refused request forever. The primary here
// is a socket answering COPY_SHARD as that build did (readBatch over a real pool).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monotonicClock } from '../../../../config/base/clock.js';
import { ErrorCodes, RowanError } from '../../../../config/base/errors.js';
import { MIGRATION_LOG_OWNER, PROMOTION_ACTOR_ID } from '../../../../config/base/ids.js';
import type { Logger } from '../../../../config/base/log.js';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { defaultLimits } from '../../../../config/limits.js';
import { CatchUp } from '../../../../actors/migration/copy.js';
import { ConfigCell } from '../../../../actors/shared/config-cell.js';
import { decodeCopyRequest, readBatch } from '../../../../actors/shared/copy-batch.js';
import { CopyReports } from '../../../../actors/shared/copy-reports.js';
import { absorbEntries, type RawEntry } from '../../../../actors/shared/gather-scatter.js';
import { attachKvShared, createKvShared, type KvShared } from '../../../../actors/shared/node-shared.js';
import { decodeRequest, encodeResponse, errorResponse, FrameReader, Op, Status } from '../../../../runtime/rpc/frames.js';
import { requestBytesMax } from '../../../../runtime/rpc/frames-layout.js';
import { PoolEntryReader } from '../../../../shm/entry-reader.js';
import { hash64Into } from '../../../../shm/hash.js';
import { EntryType, readEntryAt } from '../../../../shm/log.js';
import { OwnerRole, Pool } from '../../../../shm/pool.js';
import { TLog } from '../../../../shm/tlog.js';

const limits = defaultLimits;
const KEYS = 3000;

function open(path: string, cluster: ClusterConfig, id: number): { pool: Pool; shared: KvShared } {
  const pool = Pool.create(path, { segmentCount: 32, segmentBytes: 256 * 1024, mode: 'pagecache' });
  return { pool, shared: attachKvShared(createKvShared(cluster, id, 1024, pool), pool.region) };
}

/** Answers COPY_SHARD as a build before walk v3 did: a 24 B request is malformed, the others walk. */
function oldPrimary(p: { pool: Pool; shared: KvShared }, seen: number[]): (s: Socket) => void {
  return (s) => {
    const frames = new FrameReader(requestBytesMax(limits));
    s.on('data', (chunk) => {
      frames.push(chunk);
      for (let f = frames.next(); f; f = frames.next()) {
        const r = decodeRequest(f, limits);
        if (r.op === Op.HELLO) s.write(encodeResponse({ status: Status.OK, id: r.id, term: 0 }));
        else if (r.op !== Op.COPY_SHARD) s.write(errorResponse(r.id, r.term, new RowanError(ErrorCodes.BAD_ARGUMENT, `op ${r.op}`)));
        else if (r.key.length === 24) {
          seen.push(24);
          s.write(errorResponse(r.id, r.term, new RowanError(ErrorCodes.BAD_ARGUMENT, 'COPY_SHARD request: 24 B, not 10 or 20')));
        } else {
          seen.push(r.key.length);
          const req = decodeCopyRequest(r.key);
          const counter = Number(Atomics.load(p.shared.versions, 0));
          const value = readBatch(p.shared.indexes[0]!, p.pool.region.bytes, 0, req, limits, 1 << 20, counter);
          s.write(encodeResponse({ status: Status.VALUE, id: r.id, term: r.term, value }));
        }
      }
    });
  };
}

function valueOf(n: { pool: Pool; shared: KvShared }, key: string): string | null {
  const k = Buffer.from(key);
  const addr = n.shared.indexes[0]!.get(k, hash64Into(k, { hi: 0, lo: 0 }), new PoolEntryReader(n.pool.region, limits));
  return addr === 0 ? null : Buffer.from(readEntryAt(n.pool.region.bytes, addr, limits)!.value).toString();
}

test('a primary that refuses walk v3 requests is walked with v2 batches: the whole shard arrives, the switch logged once', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-copy-v2-'));
  const seen: number[] = [];
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const warned: string[] = [];
  const log = { info: () => {}, debug: () => {}, error: () => {}, warn: (_o: unknown, msg: string) => warned.push(msg) } as unknown as Logger;
  let copier: CatchUp | null = null;
  try {
    const planned = planCluster({
      nodes: [0, 1].map((id) => ({ id, host: '127.0.0.1', dataDir: join(dir, `n${id}`), workerPorts: [port], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
      shardCount: 1,
      replicationFactor: 2,
    });
    const cluster: ClusterConfig = { ...planned, catchingUp: [{ shard: 0, node: 1 }] };
    const p = open(join(dir, 'p.pm'), cluster, 0);
    const r = open(join(dir, 'r.pm'), cluster, 1);
    const entries: RawEntry[] = Array.from({ length: KEYS }, (_, i) => ({ s: 0, v: i + 1, t: EntryType.Put, key: Buffer.from(`k-${i}`), value: Buffer.from(`v-${i}`.padEnd(200, '.')) }));
    absorbEntries(p.pool, p.shared, TLog.recover(p.pool, PROMOTION_ACTOR_ID, limits, OwnerRole.Digest), entries, limits);
    server.on('connection', oldPrimary(p, seen));
    const rlog = TLog.recover(r.pool, MIGRATION_LOG_OWNER, limits, OwnerRole.Digest);
    copier = new CatchUp({ nodeId: 1, cell: ConfigCell.create(cluster, false), pool: r.pool, shared: r.shared, log: () => rlog, limits, clock: monotonicClock, logger: log, reports: CopyReports.create(1), secret: null, tls: null });
    copier.onConfig();
    for (const t0 = Date.now(); copier.done.length === 0; await new Promise((res) => setTimeout(res, 5))) {
      assert.ok(Date.now() - t0 < 30_000, `no copy finished in 30 s; requests seen: ${seen.length}`);
    }
    assert.equal(copier.done[0]!.entries, KEYS);
    for (let i = 0; i < KEYS; i++) assert.equal(valueOf(r, `k-${i}`), `v-${i}`.padEnd(200, '.'));
    assert.ok(seen.includes(24) && seen.some((n) => n === 20), `refused v3 then walked v2: ${seen.join(',')}`);
    assert.equal(warned.filter((m) => m.includes('refused a packed walk request')).length, 1);
    r.pool.close();
    p.pool.close();
  } finally {
    copier?.stop();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
