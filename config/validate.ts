// Checks a resolved configuration: first every key against the schema (./schema.ts: type, range,
// allowed values, no unknown key), then the rules between keys. Every failure is ROWAN_ERR_BAD_CONFIG
// naming the field and the rule, so a bad config file, variable or flag fails at start, not deep in
// an actor.
import { ErrorCodes, RowanError } from './base/errors.js';
import { checkLimits, defaultLimits } from './limits.js';
import { checkTimings, defaultTimings } from './timings.js';
import type { RowanConfig } from './model.js';
import { formatCpuList } from './parse.js';
import { configSchema } from './schema.js';

function fail(field: string, rule: string, got: unknown): never {
  throw new RowanError(ErrorCodes.BAD_CONFIG, `config field ${field}: ${rule} (got ${JSON.stringify(got)})`, { field });
}

function int(field: string, v: number, min: number, max: number): void {
  if (v < min || v > max) fail(field, `must be an integer in [${min}, ${max}]`, v);
}

/** roles[0].role, blog.batchSegments, runtime.restarts.clean */
function fieldOf(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i ? '.' : ''}${String(p)}`)).join('');
}

function valueAt(c: unknown, path: readonly PropertyKey[]): unknown {
  let v = c;
  for (const p of path) v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[p] : undefined;
  return v;
}

function checkSchema(c: RowanConfig): void {
  const r = configSchema.safeParse(c);
  if (r.success) return;
  const issue = r.error.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    const field = fieldOf([...issue.path, issue.keys[0]!]);
    fail(field, 'unknown field', valueAt(c, [...issue.path, issue.keys[0]!]));
  }
  // A key of a map (runtime.restarts) that is no role.
  if (issue.code === 'invalid_key') fail(fieldOf(issue.path.slice(0, -1)), `${String(issue.path[issue.path.length - 1])} is not a role`, valueAt(c, issue.path.slice(0, -1)));
  fail(fieldOf(issue.path), issue.message, valueAt(c, issue.path));
}

/**
 * @param allowedCores CPUs this process may run on (sched_getaffinity of the main thread); when given,
 *   every configured core must be among them.
 */
export function validateConfig(c: RowanConfig, allowedCores?: readonly number[]): RowanConfig {
  checkLimits(defaultLimits);
  checkTimings(defaultTimings);
  checkSchema(c);
  const checkCores = (field: string, cores: number[]): void => {
    if (!allowedCores) return;
    const missing = cores.filter((x) => !allowedCores.includes(x));
    if (missing.length) fail(field, `CPU ${formatCpuList(missing)} is not available to this process (allowed: ${formatCpuList(allowedCores)})`, cores);
  };
  checkCores('cores', c.cores);
  const seen = new Set<string>();
  c.roles.forEach((r, i) => {
    if (seen.has(r.role)) fail(`roles[${i}].role`, 'each role may be listed once', r.role);
    seen.add(r.role);
    if (r.cores !== undefined) checkCores(`roles[${i}].cores`, r.cores);
  });
  // One control thread per Rowan instance (§3.2.3): the b-log has one poster of receive buffers.
  const control = c.roles.find((r) => r.role === 'control');
  if (control && control.count !== 1) fail('roles.control.count', 'a node runs exactly one control actor', control.count);
  // One soft RNIC per node: it owns the node's fabric port.
  const nic = c.roles.find((r) => r.role === 'nic');
  if (nic && nic.count !== 1) fail('roles.nic.count', 'a node runs at most one nic actor', nic.count);
  if ((c.pool.segmentBytes & (c.pool.segmentBytes - 1)) !== 0) fail('pool.segmentBytes', 'must be a power of two', c.pool.segmentBytes);
  int('blog.preallocSegments', c.blog.preallocSegments, 1, c.pool.segmentCount);
  int('blog.batchSegments', c.blog.batchSegments, 1, c.blog.preallocSegments);
  int('gc.reserveSegments', c.gc.reserveSegments, 0, Math.floor(c.pool.segmentCount / 2));
  if (c.resharding.targetPercent > c.resharding.overloadPercent)
    fail('resharding.targetPercent', `must be a number in [0, ${c.resharding.overloadPercent}] (resharding.overloadPercent)`, c.resharding.targetPercent);
  // TLS is all or nothing: a certificate without its key or CA could not be presented or checked.
  const tlsSet = [c.tls.cert, c.tls.key, c.tls.ca].filter((f) => f !== '').length;
  if (tlsSet !== 0 && tlsSet !== 3) fail('tls', 'tls.cert, tls.key and tls.ca go together (all three files, or none: TLS off)', c.tls);
  // A whole segment batch must fit one ring record (header + one word per segment).
  if (c.runtime.ringWords < c.blog.batchSegments + 1)
    fail('runtime.ringWords', `must hold one batch of blog.batchSegments (${c.blog.batchSegments}) + 1 words`, c.runtime.ringWords);
  return c;
}
