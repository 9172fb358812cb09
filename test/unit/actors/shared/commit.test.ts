// CommitVer on the primary (§4.4, actors/shared/commit.ts): with several workers claiming versions of one
// shard and finishing them out of order, CommitVer never covers an unfinished version, and reaches the
// shard's version once everything is done. Plus live-byte accounting and read epochs (gc-state.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CommitTracker } from '../../../../actors/shared/commit.js';
import { createGcShared, ReadEpochs } from '../../../../actors/shared/gc-state.js';

const geometry = { dataOffset: 4096, segmentBytes: 65536, segmentCount: 8 };

test('CommitVer stays below every unfinished version, across workers, in any finishing order', () => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ worker: fc.integer({ min: 0, max: 2 }), finish: fc.boolean(), pick: fc.nat() }), { maxLength: 200 }),
      (steps) => {
        const g = createGcShared(geometry, 2);
        const versions = new BigInt64Array(2);
        const workers = [0, 1, 2].map((id) => new CommitTracker(g, versions, 2, id, 3));
        const open: { worker: number; v: number }[] = [];
        for (const s of steps) {
          if (s.finish && open.length > 0) {
            const [o] = open.splice(s.pick % open.length, 1);
            workers[o!.worker]!.finish(1, o!.v);
          } else {
            open.push({ worker: s.worker, v: workers[s.worker]!.claim(1) });
          }
          const c = workers[s.worker]!.commitVer(1);
          const lowestOpen = Math.min(...open.map((o) => o.v), Number(versions[1]) + 1);
          // Exact: every version below the lowest unfinished one is finished, that one is not.
          assert.equal(c, lowestOpen - 1);
        }
        assert.equal(workers[0]!.commitVer(0), 0, 'an untouched shard commits nothing');
      },
    ),
    { numRuns: 300 },
  );
});

test('dissemination writes each CommitVer advance once per node and gives a failed one back', async () => {
  const g = createGcShared(geometry, 1);
  const versions = new BigInt64Array(1);
  const a = new CommitTracker(g, versions, 1, 0, 2);
  const b = new CommitTracker(g, versions, 1, 1, 2);
  const v1 = a.claim(0);
  a.finish(0, v1);
  const written: string[] = [];
  let fail = false;
  const channel = async (node: number) => ({
    write: async (bytes: Uint8Array) => {
      if (fail) throw new Error('backup gone');
      written.push(`${node}:${bytes.length}`);
      return 0;
    },
  });
  const shards = [{ shard: 0, backups: [1, 2] }];
  assert.equal(await a.disseminate(shards, channel, (await import('../../../../config/limits.js')).defaultLimits), 1);
  assert.deepEqual(written, ['1:64', '2:64']);
  assert.equal(await b.disseminate(shards, channel, (await import('../../../../config/limits.js')).defaultLimits), 0, 'the other worker sees it already sent');
  const v2 = b.claim(0);
  b.finish(0, v2);
  fail = true;
  await a.disseminate(shards, channel, (await import('../../../../config/limits.js')).defaultLimits);
  fail = false;
  assert.equal(await b.disseminate(shards, channel, (await import('../../../../config/limits.js')).defaultLimits), 1, 'a failed advance is retried');
  assert.equal(written.length, 4);
});

test('read epochs: a reader inside a stretch that began before retire() holds up quiescence', () => {
  const e = new ReadEpochs(createGcShared(geometry, 1).epochs);
  const r = ReadEpochs.slotOf('worker', 3);
  assert.ok(e.quiescent(e.retire()), 'nobody reading');
  e.enter(r);
  const t = e.retire();
  assert.equal(e.quiescent(t), false);
  e.exit(r);
  assert.ok(e.quiescent(t));
  const t2 = e.retire();
  e.enter(r); // entered after the bump: cannot hold an address from before it
  assert.ok(e.quiescent(t2));
  e.exit(r);
});
