// The late-block verdict of the fault tests (test/fixtures/node-metrics.ts): a node's 'late-block' log
// records are read from every process it ran (a restarted node appends to its log), and a late block
// is allowed only on a shard that had a write of unknown outcome, at most one per backup per such write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Operation } from '../../check/linearizability.js';
import { assertLateOnlyUnknown, loggedLateBlocks } from '../../fixtures/node-metrics.js';

const put = (key: string, outcome: Operation['outcome']): Operation => ({ client: 1, key, op: 'put', value: 'v', invoke: 0, response: 1, outcome });
const shardOf = (k: string) => Number(k.slice(1));

test('the late blocks of every process a node ran are read from its log', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-late-blocks-'));
  try {
    const rec = (o: object) => JSON.stringify({ level: 50, ...o });
    // Two processes of node 1 (the first killed mid-line), none of node 0, node 2 never logged.
    writeFileSync(join(dir, 'node-1.log'), [rec({ event: 'late-block', shard: 3, version: 17, floor: 20 }), 'starting node 1', rec({ msg: 'node ready' }), rec({ event: 'late-block', shard: 4, version: 9, floor: 9 }), '{"event":"late-bl'].join('\n'));
    writeFileSync(join(dir, 'node-0.log'), `${rec({ msg: 'node ready' })}\n`);
    assert.deepEqual(loggedLateBlocks(dir, [0, 1, 2]), [
      { node: 1, shard: 3, version: 17 },
      { node: 1, shard: 4, version: 9 },
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a late block is an acknowledged write thrown away unless its shard had a write of unknown outcome', () => {
  const late = [{ node: 1, shard: 3, version: 17 }];
  assert.throws(() => assertLateOnlyUnknown(late, [put('s3', 'ok'), put('s4', 'unknown')], shardOf, 2), /shard 3: 1 block\(s\) refused as late .* only 0 write\(s\) of unknown outcome/);
  assert.match(assertLateOnlyUnknown(late, [put('s3', 'ok'), put('s3', 'unknown')], shardOf, 2), /1 late b-log block\(s\) logged \(shard 3: 1\), 1 write\(s\) of unknown outcome/);
  assert.match(assertLateOnlyUnknown([], [put('s3', 'ok')], shardOf, 2), /0 late b-log block\(s\) logged \(none\)/);
});

test('each backup may refuse each unknown write once, no more', () => {
  const late = (n: number) => Array.from({ length: n }, (_, i) => ({ node: i % 2, shard: 5, version: 40 + i }));
  const history = [put('s5', 'unknown'), put('s5', 'fail'), { ...put('s5', 'ok'), op: 'get' as const, output: null }];
  assertLateOnlyUnknown(late(2), history, shardOf, 2);
  assert.throws(() => assertLateOnlyUnknown(late(3), history, shardOf, 2), /shard 5: 3 block/);
});
