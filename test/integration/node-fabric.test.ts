// `rowan start --fabric verbs` on a machine without an RDMA device fails at once with a clear message
// and a stable code, before it creates a pool or starts a thread.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listDevices } from '../../native/verbs.js';
import { randomBasePort } from '../fixtures/cluster.js';

const rowan = new URL('../../../bin/rowan', import.meta.url).pathname;

test('--fabric verbs without an RDMA device is refused with ROWAN_ERR_VERBS_NO_DEVICE', (t) => {
  let devices = 0;
  try {
    devices = listDevices().length;
  } catch {
    devices = 0;
  }
  if (devices > 0) {
    t.skip('this machine has an RDMA device');
    return;
  }
  const dir = join(mkdtempSync(join(tmpdir(), 'rowan-verbs-')), 'node');
  try {
    const r = spawnSync(process.execPath, [rowan, 'start', '--no-auth', '--fabric', 'verbs', '--data-dir', dir], { encoding: 'utf8', timeout: 30_000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /ROWAN_ERR_VERBS_NO_DEVICE/);
    assert.match(r.stderr, /use --fabric shm or --fabric tcp/);
    assert.match(r.stderr, /\/sys\/class\/infiniband/, 'it says what is missing: the kernel\'s RDMA device list');
    assert.equal(existsSync(join(dir, 'pool.pm')), false, 'no pool was created');
  } finally {
    rmSync(join(dir, '..'), { recursive: true, force: true });
  }
});

test('rowan cluster --fabric verbs without an RDMA device is refused once, before any node starts', (t) => {
  if (deviceCount() > 0) {
    t.skip('this machine has an RDMA device');
    return;
  }
  const dir = join(mkdtempSync(join(tmpdir(), 'rowan-verbs-')), 'cluster');
  try {
    const r = spawnSync(process.execPath, [rowan, 'cluster', '--dir', dir, '--fabric', 'verbs', '--base-port', String(randomBasePort())], { encoding: 'utf8', timeout: 30_000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /ROWAN_ERR_VERBS_NO_DEVICE/);
    assert.equal(existsSync(join(dir, 'cluster.json')), false, 'no cluster was written');
    assert.equal(existsSync(join(dir, 'node-0')), false, 'no node was started');
  } finally {
    rmSync(join(dir, '..'), { recursive: true, force: true });
  }
});

function deviceCount(): number {
  try {
    return listDevices().length;
  } catch {
    return 0;
  }
}
