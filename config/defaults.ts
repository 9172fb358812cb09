// The paper's parameters (§4.3, §4.4, §4.6, §6.1) as defaults. Where the paper's number assumes a
// large server (512 pre-posted b-log segments of 4 MiB = 2 GiB), `scaleBlogToPool` keeps its ratios
// (prealloc = 1/4 of the pool, batch = 1/4 of prealloc) and caps at the paper's values.
import { defaultLimits } from './limits.js';
import type { RoleSpec, RowanConfig } from './model.js';

export const paper = {
  segmentBytes: defaultLimits.segmentBytes, // 4 MiB
  blogPreallocSegments: 512,
  blogBatchSegments: 128,
  usedGraceMs: 2,
  replicationRetryMs: 1,
  commitVerPeriodMs: 15,
  gcLiveThresholdPercent: 75,
  reshardPeriodMs: 500,
  reshardOverloadPercent: 30,
  reshardTargetPercent: 5,
} as const;

/** The nic's port when none is configured (one node per host; give each node its own otherwise). */
export const defaultNicPort = 7400;

/** A development pool: 64 x 4 MiB = 256 MiB (sparse until written in pagecache mode). */
export const defaultSegmentCount = 64;

/** One actor of every role, the smallest node that exercises every ring. */
export const defaultRoles: RoleSpec[] = [
  { role: 'worker', count: 1 },
  { role: 'control', count: 1 },
  { role: 'digest', count: 1 },
  { role: 'clean', count: 1 },
  { role: 'migration', count: 1 },
];

export function scaleBlogToPool(segmentCount: number): { preallocSegments: number; batchSegments: number } {
  const preallocSegments = Math.max(1, Math.min(paper.blogPreallocSegments, Math.floor(segmentCount / 4)));
  const batchSegments = Math.max(1, Math.min(paper.blogBatchSegments, Math.floor(preallocSegments / 4)));
  return { preallocSegments, batchSegments };
}

/** Segments one peer node's one-sided regions may hold (config fabric.remoteSegmentsMax): a quarter of
 *  the pool, so two peers' remote logs leave half of it to the node's own b-log (a quarter posted,
 *  scaleBlogToPool) and logs, and three leave a quarter. */
export function scaleRemoteToPool(segmentCount: number): number {
  return Math.max(1, Math.floor(segmentCount / 4));
}

export function defaultConfig(dataDir: string, cores: number[]): RowanConfig {
  return {
    dataDir,
    persistence: 'pagecache',
    pm: { media: 'none', dimms: 3, dimmWriteMBps: 2000 },
    roles: defaultRoles.map((r) => ({ ...r })),
    cores: [...cores],
    logLevel: 'info',
    fabric: { kind: 'shm', host: '127.0.0.1', port: defaultNicPort, remoteSegmentsMax: scaleRemoteToPool(defaultSegmentCount) },
    pool: { segmentCount: defaultSegmentCount, segmentBytes: paper.segmentBytes },
    blog: { ...scaleBlogToPool(defaultSegmentCount), usedGraceMs: paper.usedGraceMs },
    replication: { retryMs: paper.replicationRetryMs, commitVerPeriodMs: paper.commitVerPeriodMs },
    gc: { liveThresholdPercent: paper.gcLiveThresholdPercent, reserveSegments: 3, periodMs: 5 },
    clients: { connectionsMax: 1024, inFlightMax: 1024, readsInFlightMax: 16, writeBytesMax: 4 * 1024 * 1024 },
    secretFile: '',
    clientPasswordFile: '',
    authDeadlineMs: 10_000,
    tls: { cert: '', key: '', ca: '' },
    resharding: {
      auto: true,
      periodMs: paper.reshardPeriodMs,
      overloadPercent: paper.reshardOverloadPercent,
      targetPercent: paper.reshardTargetPercent,
      copyMoves: false,
    },
    runtime: { ringWords: 16384, readyTimeoutMs: 10_000, stopTimeoutMs: 5_000, idleTickMs: 200, threads: 'auto', restarts: {} },
  };
}
