// `rowan manager` given a cluster file it cannot use: a clear error with its stable code, exit 2 (1 for
// a format another build may read), and
// nothing created on disk (no manager directory, no pool file beside a path that does not exist).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const rowan = new URL('../../../bin/rowan', import.meta.url).pathname;

function manager(args: string[]): { code: number; stderr: string } {
  const r = spawnSync(process.execPath, [rowan, 'manager', '--no-auth', '--port', '0', ...args], { timeout: 60_000 });
  return { code: r.status ?? -1, stderr: r.stderr.toString() };
}

test('rowan manager on a missing, unreadable or invalid cluster file: a clear error, nothing created', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-manager-bad-'));
  try {
    const missing = join(dir, 'absent', 'cluster.json');
    let r = manager(['--cluster', missing]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /cannot read cluster config .*absent\/cluster\.json: ENOENT \(ROWAN_ERR_BAD_CONFIG\)/);
    assert.equal(existsSync(join(dir, 'absent')), false, 'no directory made beside a missing cluster file');

    const notJson = join(dir, 'bad.json');
    writeFileSync(notJson, '{ this is not json');
    r = manager(['--cluster', notJson]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /bad\.json is not JSON: .*\(ROWAN_ERR_BAD_CONFIG\)/);
    assert.equal(existsSync(join(dir, 'manager')), false, 'no manager directory nor pool for a file that is not a configuration');

    const invalid = join(dir, 'invalid.json');
    writeFileSync(invalid, JSON.stringify({ term: -1 }));
    r = manager(['--cluster', invalid]);
    assert.equal(r.code, 1, r.stderr); // a format this build does not read: not a usage error (another version may)
    assert.match(r.stderr, /cluster config format undefined, this build reads format \d+ \(ROWAN_ERR_CLUSTER_FORMAT\)/);
    assert.equal(existsSync(join(dir, 'manager')), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
