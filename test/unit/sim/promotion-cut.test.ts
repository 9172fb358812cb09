// A promotion cut short by a full restart, in the deterministic simulator (test/sim/faults.ts
// schedulePromotionCut; nemesis seed 345667674 found it on a real cluster): a shard moves to a backup
// and back, its primary loses power, and every node (or only the new primary, for less than a lease)
// loses power the moment the failover's prepare is acknowledged. Where the node promoted by that failover had been promoted for the shard before (by
// the first move), its cold start used to refuse every block its primary wrote since, as "after its
// promotion" (the record of the old one): acknowledged writes read back older values, or were lost.
// Every check passes in every seed, and enough seeds line the hazard up for the run to mean something.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PROMOTION_CUT, runSeed } from '../../sim/simulation.js';

const SEEDS = 32;

test(`${SEEDS} seeds: a failover whose promotion a full restart cuts short keeps every acknowledged write`, { timeout: 900_000 }, async () => {
  const failed: string[] = [];
  let cut = 0;
  let hazard = 0;
  for (let seed = 1; seed <= SEEDS; seed++) {
    const r = await runSeed(seed, PROMOTION_CUT);
    if (!r.ok) failed.push(`seed ${seed}: ${r.findings.slice(0, 3).map((f) => `[${f.check}] ${f.detail.slice(0, 300)}`).join('\n')}`);
    if (r.faults.some((f) => / lost power at the failover's prepare/.test(f))) cut++;
    if (r.faults.some((f) => f.includes('(the hazard:'))) hazard++;
  }
  assert.deepEqual(failed, []);
  assert.ok(hazard >= 3, `only ${hazard} of ${SEEDS} seeds promoted, at the cut failover, the node the first move had promoted`);
  console.log(`sim promotion-cut: ${cut} of ${SEEDS} seeds cut a failover's promotion short, ${hazard} of them on a node promoted for the shard before; every check passed in every seed`);
});
