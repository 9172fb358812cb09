// Resolving a configuration: defaults (config/defaults.ts) <- optional JSON file <- ROWAN_* environment
// variables (config/env.ts) <- CLI flags, then
// validate. Objects merge field by field, arrays and scalars replace. A key the model does not know
// is an error (a typo in a config file must not silently fall back to a default).
import { readFileSync } from 'node:fs';
import { ErrorCodes, RowanError } from './base/errors.js';
import { defaultConfig, scaleBlogToPool, scaleRemoteToPool } from './defaults.js';
import type { ConfigInput, RowanConfig } from './model.js';
import { parseRoles } from './parse.js';
import { validateConfig } from './validate.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function merge(base: Obj, over: Obj, path: string): Obj {
  const out: Obj = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) continue;
    const field = path ? `${path}.${k}` : k;
    if (!(k in base)) throw new RowanError(ErrorCodes.BAD_CONFIG, `config field ${field}: unknown field`, { field });
    // restarts is a map keyed by role: its keys are checked by validateConfig, not against the defaults.
    if (isObj(base[k]) && isObj(v) && field !== 'runtime.restarts') out[k] = merge(base[k] as Obj, v, field);
    else out[k] = v;
  }
  return out;
}

export function loadConfigFile(path: string): ConfigInput {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new RowanError(ErrorCodes.BAD_CONFIG, `cannot read config file ${path}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new RowanError(ErrorCodes.BAD_CONFIG, `config file ${path} is not JSON: ${(err as Error).message}`);
  }
  if (!isObj(parsed)) throw new RowanError(ErrorCodes.BAD_CONFIG, `config file ${path} must hold a JSON object`);
  return parsed as ConfigInput;
}

export interface ResolveOptions {
  dataDir: string;
  /** CPUs this process may use; the default `cores` and the check of configured ones. */
  allowedCores: number[];
  file?: ConfigInput;
  /** The ROWAN_* environment variables' layer (configFromEnv). */
  env?: ConfigInput;
  flags?: ConfigInput;
}

export function resolveConfig(o: ResolveOptions): RowanConfig {
  let cfg = defaultConfig(o.dataDir, o.allowedCores) as unknown as Obj;
  for (const layer of [o.file, o.env, o.flags]) {
    if (!layer) continue;
    const l = { ...layer } as Obj;
    if (typeof l.roles === 'string') l.roles = parseRoles(l.roles);
    cfg = merge(cfg, l, '');
  }
  const c = cfg as unknown as RowanConfig;
  // The paper's b-log numbers follow the pool size unless a layer set them.
  const setBlog = (k: 'preallocSegments' | 'batchSegments') => [o.file, o.env, o.flags].some((l) => l?.blog?.[k] !== undefined);
  const scaled = scaleBlogToPool(c.pool.segmentCount);
  if (!setBlog('preallocSegments')) c.blog.preallocSegments = scaled.preallocSegments;
  if (!setBlog('batchSegments')) c.blog.batchSegments = Math.min(scaled.batchSegments, c.blog.preallocSegments);
  // So does the per-peer region quota.
  if (![o.file, o.env, o.flags].some((l) => l?.fabric?.remoteSegmentsMax !== undefined)) c.fabric.remoteSegmentsMax = scaleRemoteToPool(c.pool.segmentCount);
  return validateConfig(c, o.allowedCores);
}
