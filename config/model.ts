// The configuration of one node: what the CLI flags, the JSON config file and the defaults resolve to.
// Field names put the qualifier last (CONVENTIONS 8): `usedGraceMs`, `liveThresholdPercent`.
import type { LogLevel } from './base/log.js';
import type { FabricKind } from './base/fabric-kinds.js';

/**
 * The thread roles of the paper (§4.1, §5.1); one actor per thread. `nic` is the soft RNIC of the tcp
 * fabric (DESIGN §4), started when `fabric.kind` is tcp or when listed. `manager` is the configuration
 * manager (§4.5), which `rowan manager` runs alone in a process of its own.
 */
export const roles = ['worker', 'control', 'digest', 'clean', 'migration', 'nic', 'manager'] as const;
export type Role = (typeof roles)[number];

/**
 * How actors map onto threads (runtime/placement.ts): `dedicated`, one thread per actor (the paper's
 * layout, §5.1); `shared`, the background roles (control, digest, clean, migration, nic) of a node
 * share one thread and each worker keeps its own; `auto`, shared when the node has fewer cores than
 * actors, dedicated otherwise.
 */
export const threadPolicies = ['auto', 'dedicated', 'shared'] as const;
export type ThreadPolicy = (typeof threadPolicies)[number];

/** dax: real PM; msync: any file, durable across power loss; pagecache: survives process crashes only. */
export const persistenceModes = ['dax', 'msync', 'pagecache'] as const;
export type PersistenceMode = (typeof persistenceModes)[number];

/** none: persists cost what this machine's memory costs; optane: they also pay a model of Optane DIMMs'
 *  media (runtime/optane/: XPBuffer write combining, read-modify-write, per-DIMM bandwidth). */
export const pmMedias = ['none', 'optane'] as const;
export type PmMedia = (typeof pmMedias)[number];

export interface RoleSpec {
  role: Role;
  /** How many actors (threads) of this role. */
  count: number;
  /** Pin every actor of the role to exactly these CPUs; absent = one CPU each, round-robin over `cores`. */
  cores?: number[];
}

export interface RowanConfig {
  dataDir: string;
  persistence: PersistenceMode;
  /** The PM media persists pay for (issue 29): a model of Optane DIMMs, opt-in. */
  pm: {
    media: PmMedia;
    /** Optane DIMMs the pool interleaves over (paper: 3 per server). */
    dimms: number;
    /** Media write bandwidth of one DIMM (paper §2.1: about 2 GB/s); benchmarks scale it down to this
     *  machine's software speed so the media, not the CPU, is the bottleneck as on the paper's testbed. */
    dimmWriteMBps: number;
  };
  roles: RoleSpec[];
  /** CPUs the node's actors may be placed on. */
  cores: number[];
  logLevel: LogLevel;
  /** How Rowan writes reach this node (DESIGN §4): shm (same host), tcp (the nic actor), verbs. */
  fabric: {
    kind: FabricKind;
    /** Address the nic listens on. */
    host: string;
    /** Port the nic listens on; 0 = any free port (reported in READY and status). */
    port: number;
    /** Segments the one-sided regions of one peer node may hold in this pool, counted until GC frees
     *  them (bounded memory: no peer ALLOCs the pool empty); one more ALLOC gets QUOTA. Default: a
     *  quarter of the pool (config/defaults.ts scaleRemoteToPool). */
    remoteSegmentsMax: number;
  };
  pool: {
    segmentCount: number;
    segmentBytes: number;
  };
  /** The b-log and its control thread (§4.3). */
  blog: {
    /** Free segments posted at start (paper: 512). */
    preallocSegments: number;
    /** Used segments handed to digest, and free ones posted, per round (paper: 128). */
    batchSegments: number;
    /** Wait after a segment looks consumed before calling it used, for in-flight DMA (paper: 2 ms). */
    usedGraceMs: number;
  };
  replication: {
    /** A replication write slower than this is re-issued (§4.3: 1 ms). */
    retryMs: number;
    /** Primaries write <shard, CommitVer> to backups this often (§4.4: 15 ms). */
    commitVerPeriodMs: number;
  };
  gc: {
    /** Clean a committed segment whose live bytes fall below this share (§4.4: 75 %). */
    liveThresholdPercent: number;
    /** Free segments only clean actors may take, so GC can always copy live entries somewhere and make
     *  room; other allocations fail with PM_FULL once no more are free. Default 3: the clean log in use,
     *  its next segment, and one that DELs may take (a full store can still be emptied). */
    reserveSegments: number;
    /** How often each clean actor looks for segments to clean. */
    periodMs: number;
  };
  /** What one client port (a worker's) lets its clients hold (bounded memory, runtime/rpc/). */
  clients: {
    /** Connections at once; one more is answered ROWAN_ERR_TOO_MANY_CONNECTIONS and closed. */
    connectionsMax: number;
    /** Requests running at once on one connection before it stops reading. */
    inFlightMax: number;
    /** GETs running at once on one connection (each may answer a value of up to valueBytesMax). */
    readsInFlightMax: number;
    /** Response bytes the peer has not read yet before the connection stops reading. */
    writeBytesMax: number;
  };
  /** The cluster secret's file (nodes prove it to each other); '' = rowan start's default (the file
   *  `secret` beside --cluster's file). docs/security.md. */
  secretFile: string;
  /** The client password's file (clients prove it on the client and Redis ports); '' = the file
   *  `client-password` beside --cluster's file. */
  clientPasswordFile: string;
  /** A connection to a client, Redis or fabric NIC port that has not authenticated this long after it
   *  was accepted is closed (docs/security.md, "Before authentication"). */
  authDeadlineMs: number;
  /** TLS on every port this node serves and every connection it opens (PEM files); all '' = off. */
  tls: {
    /** This node's certificate (chain). */
    cert: string;
    /** The certificate's private key (mode 0600). */
    key: string;
    /** The CA that signed the cluster's certificates: peers and clients are verified against it. */
    ca: string;
  };
  resharding: {
    /** The manager moves hot shards on its own (§4.6); false: only `rowan reshard` moves them. */
    auto: boolean;
    /** Per-shard request counters are reported this often (§4.6: 500 ms). */
    periodMs: number;
    /** A node this far above the average load is overloaded (30 %). */
    overloadPercent: number;
    /** Move shards until every node is within this of the average (5 %). */
    targetPercent: number;
    /** A hot shard no full backup can take without becoming the hotspot goes to the least loaded node
     *  holding no replica of it, by a copy move (§4.6 as in the paper); false: role moves only. */
    copyMoves: boolean;
  };
  runtime: {
    /** Capacity of each actor-to-actor ring, in Int32 words. */
    ringWords: number;
    /** An actor that has not reported READY by then fails the start. */
    readyTimeoutMs: number;
    /** An actor that has not stopped by then is terminated. */
    stopTimeoutMs: number;
    /** Longest wait of an idle actor between periodic passes (runtime/tick-schedule.ts). */
    idleTickMs: number;
    /** Actors per thread (runtime/placement.ts threadsOf). */
    threads: ThreadPolicy;
    /** Restarts allowed per role before a failure takes the node down (default 0: fail fast). */
    restarts: Partial<Record<Role, number>>;
  };
}

/** What a config file or the CLI may give: any subset, merged over the defaults. */
export type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? (T[K] extends unknown[] ? T[K] : DeepPartial<T[K]>) : T[K] };
export type ConfigInput = DeepPartial<Omit<RowanConfig, 'roles'>> & { roles?: RoleSpec[] | string };
