// What "pool usage" means for the expiry benchmark: summed over the cluster's nodes, the segments not
// Free (what the pools hold: live entries, garbage not yet cleaned, open segments), the index items
// (keys and DEL tombstones still indexed) and the live bytes the clean actors count (`rowan status`).
import { collectClusterStatus } from '../../bin/cluster-status.js';

export interface PoolUsage {
  /** Segments not Free on any node. */
  usedSegments: number;
  indexItems: number;
  liveMB: number;
  /** Tombstones the clean actors' sweeps dropped, segments they reclaimed, and their busy seconds
   *  (summed over the nodes since start): which stage of the reclaim lags. */
  tombstonesDropped: number;
  cleanedSegments: number;
  cleanBusyS: number;
}

export async function poolUsage(file: string): Promise<PoolUsage> {
  const s = await collectClusterStatus(file);
  const u: PoolUsage = { usedSegments: 0, indexItems: 0, liveMB: 0, tombstonesDropped: 0, cleanedSegments: 0, cleanBusyS: 0 };
  for (const n of s.nodes) {
    const st = n.status;
    if (!st?.storage) throw new Error(`bench expiry: node ${n.id} gave no status (${n.error ?? 'no storage section'})`);
    const counts = st.pool?.counts as Record<string, number> | undefined;
    if (!counts) throw new Error(`bench expiry: node ${n.id} reports no segment counts`);
    u.usedSegments += Object.entries(counts).reduce((a, [k, v]) => (k === 'free' ? a : a + v), 0);
    u.indexItems += st.storage.index?.items ?? 0;
    for (const g of st.storage.groups) u.liveMB += (g.liveBytes ?? 0) / 1e6;
    for (const a of st.actors) {
      u.tombstonesDropped += a.counters.CLEAN_TOMBSTONES_DROPPED;
      u.cleanedSegments += a.counters.CLEAN_SEGMENTS;
      u.cleanBusyS += a.counters.CLEAN_BUSY_US / 1e6;
    }
  }
  return u;
}
