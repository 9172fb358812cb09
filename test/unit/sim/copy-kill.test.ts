// Copy moves in the deterministic simulator (test/sim/faults.ts scheduleCopyKill): a shard's primary
// or backup replica is moved to the node holding none under the clients' writes of its keys, and its
// target or its source loses power mid-copy; half the time the manager dies right after storing the
// copy's term. Every check passes (linearizability per key, replicas after a cold start, one primary),
// and the failover of the killed node ends the copy: no copy is listed at the end, and the manager that
// started it reports it rolled back (one restarted since has no record of it to report).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runSeed } from '../../sim/simulation.js';

const SEEDS = 16;

for (const victim of ['target', 'source'] as const) {
  test(`${SEEDS} seeds: a copy move whose ${victim} is killed mid-copy is rolled back, every check passes`, { timeout: 900_000 }, async () => {
    const failed: string[] = [];
    let killed = 0;
    let rolledBack = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      const r = await runSeed(seed, { copyKill: victim });
      if (!r.ok) failed.push(`seed ${seed}: ${r.findings.slice(0, 3).map((f) => `[${f.check}] ${f.detail.slice(0, 300)}`).join('\n')}`);
      // Counted where the victim was failed over (evicted): a node that comes back before any manager
      // suspects it (down across a manager restart, say) keeps its shards, and the copy goes on.
      const kill = r.faults.map((f) => new RegExp(`${victim} node (\\d+) killed mid-copy`).exec(f)).find((m) => m !== null);
      if (!kill || !r.nodes[Number(kill[1])]!.endsWith('/evicted')) continue;
      killed++;
      if (r.log.some((l) => l.includes('copy rolled back'))) rolledBack++;
      if (r.copies > 0) failed.push(`seed ${seed}: the ${victim} was killed mid-copy but the copy is still listed at the end`);
    }
    assert.deepEqual(failed, []);
    assert.ok(killed >= SEEDS / 4, `only ${killed} of ${SEEDS} seeds killed the ${victim} mid-copy (and failed it over)`);
    assert.ok(rolledBack > 0, 'no seed saw the manager report a copy rolled back');
    console.log(`sim copy-kill (${victim}): ${killed} of ${SEEDS} seeds killed it mid-copy and failed it over, the copy ended in all, ${rolledBack} reported rolled back by the manager that started it; every check passed in every seed`);
  });
}
