// Checks a resolved configuration field by field; every failure is ROWAN_ERR_BAD_CONFIG naming the
// field and the rule, so a bad config file or flag fails at start, not deep in an actor.
import { CPU_ID_MAX } from './base/ids.js';
import { ErrorCodes, RowanError } from './base/errors.js';
import { logLevels } from './base/log.js';
import { checkLimits, defaultLimits } from './limits.js';
import { persistenceModes, roles, type RowanConfig } from './model.js';
import { formatCpuList } from './parse.js';
import { FABRIC_KINDS } from './base/fabric-kinds.js';

function fail(field: string, rule: string, got: unknown): never {
  throw new RowanError(ErrorCodes.BAD_CONFIG, `config field ${field}: ${rule} (got ${JSON.stringify(got)})`, { field });
}

function int(field: string, v: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
    fail(field, `must be an integer in [${min}, ${max}]`, v);
  return v as number;
}

function num(field: string, v: unknown, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) fail(field, `must be a number in [${min}, ${max}]`, v);
  return v as number;
}

function oneOf<T extends string>(field: string, v: unknown, allowed: readonly T[]): T {
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) fail(field, `must be one of ${allowed.join('|')}`, v);
  return v as T;
}

/**
 * @param allowedCores CPUs this process may run on (sched_getaffinity of the main thread); when given,
 *   every configured core must be among them.
 */
export function validateConfig(c: RowanConfig, allowedCores?: readonly number[]): RowanConfig {
  checkLimits(defaultLimits);
  if (typeof c.dataDir !== 'string' || c.dataDir === '') fail('dataDir', 'must be a non-empty path', c.dataDir);
  oneOf('persistence', c.persistence, persistenceModes);
  oneOf('logLevel', c.logLevel, logLevels);

  const checkCores = (field: string, cores: unknown): void => {
    if (!Array.isArray(cores) || cores.length === 0) fail(field, 'must be a non-empty list of CPU numbers', cores);
    for (const cpu of cores as unknown[]) int(field, cpu, 0, CPU_ID_MAX);
    if (allowedCores) {
      const missing = (cores as number[]).filter((x) => !allowedCores.includes(x));
      if (missing.length)
        fail(field, `CPU ${formatCpuList(missing)} is not available to this process (allowed: ${formatCpuList(allowedCores)})`, cores);
    }
  };
  checkCores('cores', c.cores);

  if (!Array.isArray(c.roles) || c.roles.length === 0) fail('roles', 'must name at least one role', c.roles);
  const seen = new Set<string>();
  c.roles.forEach((r, i) => {
    oneOf(`roles[${i}].role`, r.role, roles);
    if (seen.has(r.role)) fail(`roles[${i}].role`, 'each role may be listed once', r.role);
    seen.add(r.role);
    int(`roles[${i}].count`, r.count, 1, defaultLimits.actorsPerRoleMax);
    if (r.cores !== undefined) checkCores(`roles[${i}].cores`, r.cores);
  });
  // One control thread per Rowan instance (§3.2.3): the b-log has one poster of receive buffers.
  const control = c.roles.find((r) => r.role === 'control');
  if (control && control.count !== 1) fail('roles.control.count', 'a node runs exactly one control actor', control.count);
  // One soft RNIC per node: it owns the node's fabric port.
  const nic = c.roles.find((r) => r.role === 'nic');
  if (nic && nic.count !== 1) fail('roles.nic.count', 'a node runs at most one nic actor', nic.count);
  oneOf('fabric.kind', c.fabric?.kind, FABRIC_KINDS);
  if (typeof c.fabric.host !== 'string' || c.fabric.host === '') fail('fabric.host', 'must be a non-empty address', c.fabric.host);
  int('fabric.port', c.fabric.port, 0, 65535);

  const pow2 = (field: string, v: number) => {
    if ((v & (v - 1)) !== 0) fail(field, 'must be a power of two', v);
  };
  int('pool.segmentCount', c.pool.segmentCount, 1, 1 << 20);
  int('pool.segmentBytes', c.pool.segmentBytes, 64 * 1024, 1 << 30);
  pow2('pool.segmentBytes', c.pool.segmentBytes);
  int('blog.preallocSegments', c.blog.preallocSegments, 1, c.pool.segmentCount);
  int('blog.batchSegments', c.blog.batchSegments, 1, c.blog.preallocSegments);
  num('blog.usedGraceMs', c.blog.usedGraceMs, 0, 60_000);
  num('replication.retryMs', c.replication.retryMs, 0.001, 60_000);
  num('replication.commitVerPeriodMs', c.replication.commitVerPeriodMs, 1, 60_000);
  num('gc.liveThresholdPercent', c.gc.liveThresholdPercent, 0, 100);
  int('gc.reserveSegments', c.gc.reserveSegments, 0, Math.floor(c.pool.segmentCount / 2));
  num('gc.periodMs', c.gc.periodMs, 1, 60_000);
  num('leaseMs', c.leaseMs, 1, 600_000);
  num('resharding.periodMs', c.resharding.periodMs, 1, 3_600_000);
  num('resharding.overloadPercent', c.resharding.overloadPercent, 0, 1000);
  num('resharding.targetPercent', c.resharding.targetPercent, 0, c.resharding.overloadPercent);
  int('runtime.ringWords', c.runtime.ringWords, defaultLimits.ringWordsMin, defaultLimits.ringWordsMax);
  // A whole segment batch must fit one ring record (header + one word per segment).
  if (c.runtime.ringWords < c.blog.batchSegments + 1)
    fail('runtime.ringWords', `must hold one batch of blog.batchSegments (${c.blog.batchSegments}) + 1 words`, c.runtime.ringWords);
  int('runtime.readyTimeoutMs', c.runtime.readyTimeoutMs, 1, 600_000);
  int('runtime.stopTimeoutMs', c.runtime.stopTimeoutMs, 1, 600_000);
  for (const [role, n] of Object.entries(c.runtime.restarts ?? {})) {
    oneOf('runtime.restarts', role, roles);
    int(`runtime.restarts.${role}`, n, 0, 1000);
  }
  return c;
}
