// The launcher's watch on the configuration store (bin/cluster-supervise.ts watchStoreChanges): a file
// store's changes of term are reported, each once and in order, as the manager replaces the file
// (write to a temporary name, rename); other files written beside it report nothing; after the stop
// nothing more is reported. (That a file store is watched rather than polled every 250 ms is what
// makes an idle launcher sleep: docs/operations.md "An idle node".)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planCluster, type ClusterConfig } from '../../../config/cluster.js';
import { FileConfigStore } from '../../../config/store.js';
import { watchStoreChanges } from '../../../bin/cluster-supervise.js';

function cluster(): ClusterConfig {
  return planCluster({
    nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'tcp' as const, host: '127.0.0.1', port: 7500 + id } })),
    shardCount: 6,
    replicationFactor: 3,
  });
}

/** Resolves once `cond` holds (looked at every 20 ms). */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 20));
}

test('a file store: each change of term is reported once, in order, until stopped', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-watch-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const store = new FileConfigStore(join(dir, 'cluster.json'));
  const first = cluster();
  await store.write(first, null);
  const seen: [number, number][] = [];
  const stop = watchStoreChanges(store, first, (from, to) => seen.push([from.term, to.term]));
  writeFileSync(join(dir, 'node-0.log'), 'a log line beside the store\n');
  await store.write({ ...first, term: 2 }, 1);
  await until(() => seen.length >= 1);
  await store.write({ ...first, term: 3 }, 2);
  await store.write({ ...first, term: 4 }, 3);
  await until(() => seen.at(-1)?.[1] === 4);
  assert.deepEqual(seen[0], [1, 2]);
  for (let i = 1; i < seen.length; i++) assert.equal(seen[i]![0], seen[i - 1]![1], `reported in order, each once: ${JSON.stringify(seen)}`);
  stop();
  const reported = seen.length;
  await store.write({ ...first, term: 5 }, 4);
  await new Promise((r) => setImmediate(r)); // a read started before the stop would settle here
  assert.equal(seen.length, reported, 'nothing reported after the stop');
});
