// The configuration schema (config/schema.ts) as the one source of checks, environment variables and
// docs: ROWAN_* variables layer between the config file and the flags, bad values name the variable or
// field, and docs/configuration.md's table is the one `rowan config --markdown` prints.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { configFromEnv } from '../../../config/env.js';
import { resolveConfig } from '../../../config/load.js';
import { configKeys, envName } from '../../../config/schema.js';
import { configMarkdown } from '../../../bin/config-cli.js';

const base = { dataDir: '/d', allowedCores: [0, 1] };

test('every leaf key has an environment variable named after it, and a description', () => {
  assert.equal(envName('pool.segmentCount'), 'ROWAN_POOL_SEGMENT_COUNT');
  assert.equal(envName('replication.commitVerPeriodMs'), 'ROWAN_REPLICATION_COMMIT_VER_PERIOD_MS');
  for (const k of configKeys()) {
    assert.ok(k.description.length > 10, `${k.key} is described`);
    if (k.key !== 'dataDir') assert.equal(k.env, envName(k.key));
  }
});

test('environment variables set keys between the config file and the flags', () => {
  const env = configFromEnv({ ROWAN_POOL_SEGMENT_COUNT: '128', ROWAN_LOG_LEVEL: 'debug', ROWAN_ROLES: 'worker:2,control', ROWAN_CORES: '0-1', ROWAN_RUNTIME_RESTARTS: '{"worker":2}', ROWAN_LAUNCHER_PID: '1', UNRELATED: 'x' });
  const c = resolveConfig({ ...base, file: { pool: { segmentCount: 64 }, logLevel: 'warn' }, env, flags: { logLevel: 'error' } });
  assert.equal(c.pool.segmentCount, 128, 'the environment beats the file');
  assert.equal(c.logLevel, 'error', 'a flag beats the environment');
  assert.deepEqual(c.roles, [{ role: 'worker', count: 2 }, { role: 'control', count: 1 }]);
  assert.deepEqual(c.cores, [0, 1]);
  assert.deepEqual(c.runtime.restarts, { worker: 2 });
  assert.equal(c.blog.preallocSegments, 32, 'the b-log still scales to the pool the environment sized');
});

test('a bad variable or value is BAD_CONFIG naming it', () => {
  assert.throws(() => configFromEnv({ ROWAN_POOL_SEGMENT_COUNT: 'lots' }), { code: 'ROWAN_ERR_BAD_CONFIG', message: /ROWAN_POOL_SEGMENT_COUNT="lots": not an integer/ });
  assert.throws(() => configFromEnv({ ROWAN_RUNTIME_RESTARTS: '{nope' }), { code: 'ROWAN_ERR_BAD_CONFIG', message: /ROWAN_RUNTIME_RESTARTS/ });
  const env = (e: Record<string, string>) => () => resolveConfig({ ...base, env: configFromEnv(e) });
  assert.throws(env({ ROWAN_PERSISTENCE: 'tape' }), { code: 'ROWAN_ERR_BAD_CONFIG', message: /persistence: must be one of dax\|msync\|pagecache \(got "tape"\)/ });
  assert.throws(env({ ROWAN_GC_LIVE_THRESHOLD_PERCENT: '101' }), { code: 'ROWAN_ERR_BAD_CONFIG', message: /gc\.liveThresholdPercent: must be a number in \[0, 100\]/ });
  assert.throws(env({ ROWAN_FABRIC_PORT: '1.5' }), { code: 'ROWAN_ERR_BAD_CONFIG', message: /fabric\.port: must be an integer in \[0, 65535\]/ });
  assert.throws(env({ ROWAN_RUNTIME_RESTARTS: '{"nobody":1}' }), { code: 'ROWAN_ERR_BAD_CONFIG', message: /runtime\.restarts/ });
  // A wrong type from a config file: the schema names the field.
  assert.throws(() => resolveConfig({ ...base, file: { pool: { segmentCount: '64' as never } } }), { code: 'ROWAN_ERR_BAD_CONFIG', message: /pool\.segmentCount: must be an integer/ });
});

test("docs/configuration.md's table is the one rowan config --markdown prints", () => {
  const page = readFileSync(new URL('../../../../docs/configuration.md', import.meta.url), 'utf8');
  assert.ok(page.includes(configMarkdown()), 'docs/configuration.md holds the table of `rowan config --markdown` (regenerate it)');
});

test('pm.media is none by default, optane by choice, and anything else is BAD_CONFIG naming it', () => {
  assert.equal(resolveConfig(base).pm.media, 'none');
  const c = resolveConfig({ ...base, file: { pm: { media: 'optane', dimms: 1 } } });
  assert.deepEqual(c.pm, { media: 'optane', dimms: 1, dimmWriteMBps: 2000 });
  assert.equal(resolveConfig({ ...base, env: configFromEnv({ ROWAN_PM_MEDIA: 'optane' }) }).pm.media, 'optane');
  assert.throws(() => resolveConfig({ ...base, env: configFromEnv({ ROWAN_PM_MEDIA: 'dram' }) }), { code: 'ROWAN_ERR_BAD_CONFIG', message: /pm\.media: must be one of none\|optane \(got "dram"\)/ });
  assert.throws(() => resolveConfig({ ...base, file: { pm: { dimms: 0 } } }), { code: 'ROWAN_ERR_BAD_CONFIG', message: /pm\.dimms: must be an integer in \[1, 12\]/ });
  assert.throws(() => resolveConfig({ ...base, file: { pm: { media: 'optane', speed: 1 } as never } }), { code: 'ROWAN_ERR_BAD_CONFIG', message: /pm/ });
});
