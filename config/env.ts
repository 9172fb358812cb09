// `ROWAN_*` environment variables: one per leaf key of the node configuration (./schema.ts), e.g.
// ROWAN_POOL_SEGMENT_COUNT=4096, ROWAN_LOG_LEVEL=debug, ROWAN_ROLES=worker:2,control,digest,clean,
// ROWAN_CORES=0-1, ROWAN_RUNTIME_RESTARTS='{"clean":3}'. They sit between the config file and the
// flags: defaults <- --config file <- environment <- flags. A value that does not parse is
// ROWAN_ERR_BAD_CONFIG naming the variable; the schema then checks its range like any other layer's.
import { ErrorCodes, RowanError } from './base/errors.js';
import type { ConfigInput } from './model.js';
import { parseCpuList, parseRoles } from './parse.js';
import { configKeys } from './schema.js';

function bad(name: string, value: string, rule: string): never {
  throw new RowanError(ErrorCodes.BAD_CONFIG, `environment ${name}=${JSON.stringify(value)}: ${rule}`, { field: name });
}

function parseValue(key: string, type: string, name: string, v: string): unknown {
  if (key === 'roles') return parseRoles(v, name);
  if (key === 'cores') return parseCpuList(v, name);
  if (type === 'integer' || type === 'number') {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n)) bad(name, v, type === 'integer' ? 'not an integer' : 'not a number');
    return n;
  }
  if (type === 'boolean') {
    if (v === 'true' || v === '1') return true;
    if (v === 'false' || v === '0') return false;
    bad(name, v, 'not true|false');
  }
  if (type === 'map') {
    try {
      return JSON.parse(v) as unknown;
    } catch {
      bad(name, v, 'not a JSON object');
    }
  }
  return v;
}

/** The configuration layer the environment gives (keys it does not set are absent). */
export function configFromEnv(env: Record<string, string | undefined>): ConfigInput {
  const out: Record<string, unknown> = {};
  for (const k of configKeys()) {
    if (k.env === null) continue;
    const v = env[k.env];
    if (v === undefined) continue;
    const path = k.key.split('.');
    let at = out;
    for (const p of path.slice(0, -1)) at = (at[p] ??= {}) as Record<string, unknown>;
    at[path[path.length - 1]!] = parseValue(k.key, k.type, k.env, v);
  }
  return out as ConfigInput;
}
