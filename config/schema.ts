// The node configuration's schema (zod): every key with its type, range and meaning, in one place. It
// gives the checks (validateConfig parses with it before the cross-field rules of ./validate.ts), the
// `ROWAN_*` environment variables (one per leaf key, ./env.ts), `rowan config` (the table of keys)
// and `rowan config --json-schema` (a JSON Schema for config files). The table of docs/configuration.md is generated
// from it and a test keeps the two equal.
import { z } from 'zod';
import { CPU_ID_MAX } from './base/ids.js';
import { logLevels } from './base/log.js';
import { FABRIC_KINDS, type FabricKind } from './base/fabric-kinds.js';
import { defaultLimits } from './limits.js';
import { persistenceModes, pmMedias, roles, threadPolicies, type RowanConfig } from './model.js';

/** One message for every way a number can miss its range (type, integer, bounds), as validate.ts words it. */
const intIn = (min: number, max: number) => {
  const message = `must be an integer in [${min}, ${max}]`;
  return z.number({ message }).int({ message }).min(min, { message }).max(max, { message });
};
const numIn = (min: number, max: number) => {
  const message = `must be a number in [${min}, ${max}]`;
  return z.number({ message }).min(min, { message }).max(max, { message });
};
const oneOf = <T extends readonly [string, ...string[]]>(values: T) => z.enum(values, { message: `must be one of ${values.join('|')}` });
const cpuList = z.array(intIn(0, CPU_ID_MAX), { message: 'must be a non-empty list of CPU numbers' }).min(1, { message: 'must be a non-empty list of CPU numbers' });

const roleSpec = z.strictObject({
  role: oneOf(roles),
  count: intIn(1, defaultLimits.actorsPerRoleMax),
  cores: cpuList.optional(),
});

export const configSchema = z.strictObject({
  dataDir: z.string({ message: 'must be a non-empty path' }).min(1, { message: 'must be a non-empty path' }).describe('directory of the pool file, control socket and pid file (rowan start --data-dir; not from the environment)'),
  persistence: oneOf(persistenceModes).describe('dax: real PM; msync: any file, survives power loss; pagecache: survives process crashes only'),
  pm: z.strictObject({
    media: oneOf(pmMedias).describe('none: persists cost what this machine\'s memory costs; optane: every persist into the pool also pays a model of Optane DIMMs (XPBuffer write combining per 256 B XPLine, read-modify-write, per-DIMM bandwidth), and status/metrics report the modelled DLWA'),
    dimms: intIn(1, 12).describe('Optane DIMMs the pool interleaves over every 4 KiB (paper: 3); with pm.media optane'),
    dimmWriteMBps: numIn(0.01, 100_000).describe('media write bandwidth of one modelled DIMM, MB/s (paper: about 2000); benchmarks scale it to this machine\'s speed'),
  }),
  roles: z.array(roleSpec, { message: 'must name at least one role' }).min(1, { message: 'must name at least one role' }).describe('actors per role, e.g. "worker:2,control,digest,clean" (one thread each; control and nic at most one)'),
  cores: cpuList.describe('CPUs the actors are pinned to, round-robin (default: every CPU this process may use)'),
  logLevel: oneOf(logLevels).describe('log level of the node and its actors'),
  fabric: z.strictObject({
    kind: oneOf(FABRIC_KINDS as unknown as readonly [FabricKind, ...FabricKind[]]).describe('how Rowan writes reach this node: shm (same host), tcp (the nic actor), verbs (RDMA)'),
    host: z.string({ message: 'must be a non-empty address' }).min(1, { message: 'must be a non-empty address' }).describe('address the nic (tcp) or the verbs side channel (verbs) listens on'),
    port: intIn(0, 65535).describe('port the nic (tcp) or the verbs side channel (verbs: QP endpoints are exchanged there) listens on (0: any free port)'),
    remoteSegmentsMax: intIn(1, 1 << 20).describe('segments one peer node\'s one-sided regions (rwrite/batch/share/tailwind/erda/asymnvm over the tcp fabric) may hold in this pool until GC frees them; one more ALLOC gets ROWAN_ERR_QUOTA (rowan start --remote-segments-max)'),
  }),
  pool: z.strictObject({
    segmentCount: intIn(1, 1 << 20).describe('PM segments in the pool'),
    segmentBytes: intIn(64 * 1024, 1 << 30).describe('bytes per PM segment, a power of two (paper: 4 MiB)'),
  }),
  blog: z.strictObject({
    preallocSegments: intIn(1, 1 << 20).describe('free b-log segments posted at start (paper: 512; at most pool.segmentCount)'),
    batchSegments: intIn(1, 1 << 20).describe('used segments handed to digest, and free ones posted, per round (paper: 128; at most blog.preallocSegments)'),
    usedGraceMs: numIn(0, 60_000).describe('wait after a segment looks consumed before calling it used (paper: 2 ms)'),
  }),
  replication: z.strictObject({
    retryMs: numIn(0.001, 60_000).describe('a replication write slower than this is re-issued (paper: 1 ms)'),
    commitVerPeriodMs: numIn(1, 60_000).describe('primaries write <shard, CommitVer> to backups this often (paper: 15 ms)'),
  }),
  gc: z.strictObject({
    liveThresholdPercent: numIn(0, 100).describe('clean a committed segment whose live bytes fall below this share (paper: 75 %)'),
    reserveSegments: intIn(0, 1 << 19).describe('free segments only clean actors may take (at most half the pool)'),
    periodMs: numIn(1, 60_000).describe('how often each clean actor looks for segments to clean'),
  }),
  clients: z.strictObject({
    connectionsMax: intIn(1, 1 << 20).describe('connections one client port holds at once; one more gets ROWAN_ERR_TOO_MANY_CONNECTIONS and is closed'),
    inFlightMax: intIn(1, 1 << 16).describe('requests running at once on one connection before it stops reading (TCP pushes back)'),
    readsInFlightMax: intIn(1, 1 << 16).describe('GETs running at once on one connection: with writeBytesMax, bounds the memory one connection can hold to writeBytesMax + readsInFlightMax x the largest value'),
    writeBytesMax: intIn(64 * 1024, 1 << 30).describe('response bytes the peer has not read before the connection stops reading'),
  }),
  secretFile: z.string({ message: 'must be a path' }).describe('file of the cluster secret nodes prove to each other (64 hex characters, mode 0600; rowan start --secret-file); empty: the file secret beside --cluster\'s file'),
  clientPasswordFile: z.string({ message: 'must be a path' }).describe('file of the client password the client and Redis ports demand (mode 0600; rowan start --client-password-file); empty: the file client-password beside --cluster\'s file'),
  authDeadlineMs: intIn(100, 3_600_000).describe('a connection to a client, Redis or fabric NIC port that has not authenticated this long after it was accepted is closed (the whole handshake: trickling bytes does not extend it)'),
  tls: z.strictObject({
    cert: z.string({ message: 'must be a path' }).describe('PEM certificate (chain) of this node, for its client, Redis, fabric and manager connections (rowan start --tls-cert); empty: TLS off'),
    key: z.string({ message: 'must be a path' }).describe('PEM private key of tls.cert, mode 0600 (rowan start --tls-key)'),
    ca: z.string({ message: 'must be a path' }).describe('PEM CA certificate(s) peers are verified against (mutual TLS between nodes) and clients verify the node with (rowan start --tls-ca)'),
  }),
  resharding: z.strictObject({
    auto: z.boolean().describe('the configuration manager moves hot shards on its own (§4.6); false: only `rowan reshard` moves them (read by rowan manager/cluster)'),
    periodMs: numIn(1, 3_600_000).describe('nodes report per-shard requests this often and the manager plans at this period (paper: 500 ms)'),
    overloadPercent: numIn(0, 1000).describe('a node whose load is this far above the average is overloaded (paper: 30 %; read by the manager)'),
    targetPercent: numIn(0, 1000).describe('moves go on until each overloaded node is within this of the average (paper: 5 %; at most overloadPercent)'),
    copyMoves: z.boolean().describe('a hot shard that no full backup can take without becoming the hotspot is copied to the least loaded node holding no replica of it (§4.6, a copy move); off by default: a copy costs the whole shard (read by rowan manager/cluster)'),
  }),
  runtime: z.strictObject({
    ringWords: intIn(defaultLimits.ringWordsMin, defaultLimits.ringWordsMax).describe('capacity of each actor-to-actor ring, in Int32 words'),
    readyTimeoutMs: intIn(1, 600_000).describe('an actor that has not reported READY by then fails the start'),
    stopTimeoutMs: intIn(1, 600_000).describe('an actor that has not stopped by then is terminated'),
    idleTickMs: intIn(1, 60_000).describe('longest wait of an idle actor between periodic passes (control, worker, clean): the wait doubles from the role\'s period while a pass finds nothing, and work wakes it at once'),
    threads: oneOf(threadPolicies).describe('actors per thread: dedicated = one thread per actor (the paper); shared = the background roles (control, digest, clean, migration, nic) share one thread, each worker has its own; auto = shared when the node has fewer cores than actors'),
    restarts: z.partialRecord(oneOf(roles), intIn(0, 1000)).describe('restarts allowed per role before a failure takes the node down, e.g. {"clean":3} (default: none)'),
  }),
});

export interface ConfigKey {
  /** Dotted path, e.g. pool.segmentCount. */
  key: string;
  /** The environment variable that sets it, e.g. ROWAN_POOL_SEGMENT_COUNT (null: not settable so). */
  env: string | null;
  /** number | integer | string | enum values | list | map. */
  type: string;
  description: string;
  schema: z.ZodType;
}

export function envName(key: string): string {
  return 'ROWAN_' + key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').replace(/\./g, '_').toUpperCase();
}

function typeOf(s: z.ZodType): string {
  if (s instanceof z.ZodOptional) return typeOf(s.unwrap() as z.ZodType);
  if (s instanceof z.ZodEnum) return (s.options as string[]).join('|');
  if (s instanceof z.ZodNumber) return s.format === 'safeint' || s.format?.includes('int') ? 'integer' : 'number';
  if (s instanceof z.ZodString) return 'string';
  if (s instanceof z.ZodArray) return 'list';
  if (s instanceof z.ZodRecord) return 'map';
  if (s instanceof z.ZodBoolean) return 'boolean';
  return 'value';
}

/** Every leaf key of the schema, in declaration order. */
export function configKeys(): ConfigKey[] {
  const out: ConfigKey[] = [];
  const walk = (obj: z.ZodObject, prefix: string): void => {
    for (const [k, s] of Object.entries(obj.shape) as [string, z.ZodType][]) {
      const key = prefix ? `${prefix}.${k}` : k;
      if (s instanceof z.ZodObject && key !== 'runtime.restarts') walk(s, key);
      else out.push({ key, env: key === 'dataDir' ? null : envName(key), type: typeOf(s), description: s.description ?? '', schema: s });
    }
  };
  walk(configSchema, '');
  return out;
}

/** A JSON Schema for config files (`rowan config --json-schema`). */
export function configJsonSchema(): unknown {
  return z.toJSONSchema(configSchema.partial(), { unrepresentable: 'any' });
}

// The schema and the model type (./model.ts, where each key is documented for readers of the code)
// must describe the same thing: a key added to one and not the other fails to compile here.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const schemaMatchesModel: Same<z.output<typeof configSchema>, RowanConfig> = true;
void schemaMatchesModel;
