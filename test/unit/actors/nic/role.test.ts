// The nic as a role of the node: it joins the roles when the fabric is tcp (or when listed), a node runs
// at most one, and the fabric fields are validated at load like every other field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultConfig } from '../../../../config/defaults.js';
import { parseRoles } from '../../../../config/parse.js';
import { resolveConfig } from '../../../../config/load.js';
import { validateConfig } from '../../../../config/validate.js';
import { nodeRoles } from '../../../../runtime/placement.js';

test('the nic joins the node roles for fabric tcp, once, and can be listed explicitly', () => {
  const c = defaultConfig('/d', [0, 1]);
  assert.equal(c.fabric.kind, 'shm');
  assert.equal(c.fabric.host, '127.0.0.1');
  assert.ok(!nodeRoles(c).some((r) => r.role === 'nic'), 'no nic for shm');
  c.fabric.kind = 'tcp';
  assert.deepEqual(nodeRoles(c).filter((r) => r.role === 'nic'), [{ role: 'nic', count: 1 }]);
  c.roles = parseRoles('worker,control,nic@1');
  assert.deepEqual(nodeRoles(c).filter((r) => r.role === 'nic'), [{ role: 'nic', count: 1, cores: [1] }], 'listed: kept as listed');
  c.fabric.kind = 'shm';
  assert.ok(nodeRoles(c).some((r) => r.role === 'nic'), '--roles ...,nic starts it whatever the fabric');
});

test('fabric fields and the nic count are validated', () => {
  const bad = (mutate: (c: ReturnType<typeof defaultConfig>) => void, field: RegExp) => {
    const c = defaultConfig('/d', [0, 1]);
    mutate(c);
    assert.throws(() => validateConfig(c, [0, 1]), { code: 'ROWAN_ERR_BAD_CONFIG', message: field });
  };
  bad((c) => (c.roles = [{ role: 'nic', count: 2 }]), /roles\.nic\.count/);
  bad((c) => (c.fabric.kind = 'carrier-pigeon' as never), /fabric\.kind: must be one of shm\|tcp\|verbs/);
  bad((c) => (c.fabric.port = 70_000), /fabric\.port/);
  bad((c) => (c.fabric.host = ''), /fabric\.host/);
  bad((c) => (c.fabric.remoteSegmentsMax = 0), /fabric\.remoteSegmentsMax/);
  const c = resolveConfig({ dataDir: '/d', allowedCores: [0, 1], flags: { fabric: { kind: 'tcp', port: 0 } } });
  assert.deepEqual(c.fabric, { kind: 'tcp', host: '127.0.0.1', port: 0, remoteSegmentsMax: 16 }, 'flags merge over the fabric defaults (the quota: a quarter of the 64-segment pool)');
});
