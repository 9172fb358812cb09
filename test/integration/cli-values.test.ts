// `rowan put/get` as scripts use them: a value from standard input (`put KEY -`) or a file
// (--value-file), byte for byte, larger than a command line could carry; `get --raw` and `get --json`;
// clear errors for a missing or oversized value; `put --ttl-ms / --expires-at-ms`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';

const rowan = new URL('../../../bin/rowan', import.meta.url).pathname;

function cli(args: string[], input?: Uint8Array): { code: number; stdout: Buffer; stderr: string } {
  const r = spawnSync(process.execPath, [rowan, ...args], { input, timeout: 60_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr.toString() };
}

test('put from stdin and from a file, byte for byte; get --raw and --json; clear errors', { timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-cli-values-'));
  const run = launchCluster(dir, randomBasePort());
  try {
    await run.ready;
    const c = ['--cluster', join(dir, 'cluster.json')];
    // 200 KB of every byte value, zeros and newlines included: more than one argv string may hold (128 KiB).
    const big = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 7) & 0xff);
    let r = cli(['put', 'big', '-', ...c], big);
    assert.equal(r.code, 0, r.stderr);
    r = cli(['get', 'big', '--raw', ...c]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(Buffer.from(big).equals(r.stdout), 'stdin bytes round-trip exactly');

    const file = join(dir, 'value.bin');
    writeFileSync(file, Buffer.from([0, 1, 2, 255, 10]));
    r = cli(['put', 'f', '--value-file', file, ...c]);
    assert.equal(r.code, 0, r.stderr);
    r = cli(['get', 'f', '--json', ...c]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout.toString()), { key: 'f', value: Buffer.from([0, 1, 2, 255, 10]).toString('utf8'), base64: 'AAEC/wo=' });
    r = cli(['get', 'nothing-here', '--json', ...c]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout.toString()), { key: 'nothing-here', value: null, base64: null });

    r = cli(['put', 'empty', '-', ...c], new Uint8Array(0));
    assert.equal(r.code, 0, r.stderr);
    r = cli(['get', 'empty', '--raw', ...c]);
    assert.equal(r.stdout.length, 0, 'an empty stdin stores an empty value');

    r = cli(['put', 'k', ...c]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /- for standard input.*ROWAN_ERR_BAD_ARGUMENT/);
    r = cli(['put', 'k', '-', ...c], new Uint8Array(2 * 1024 * 1024));
    assert.equal(r.code, 1);
    assert.match(r.stderr, /ROWAN_ERR_VALUE_TOO_LARGE/);
    r = cli(['put', 'k', '--value-file', join(dir, 'missing'), ...c]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /cannot read the value from .*missing: ENOENT/);

    // Expiry (SET PX / PXAT): a key with a long TTL reads back; one whose deadline passed reads as absent.
    r = cli(['put', 'session', 'token', '--ttl-ms', '600000', ...c]);
    assert.equal(r.code, 0, r.stderr);
    r = cli(['get', 'session', ...c]);
    assert.equal(r.stdout.toString(), 'token\n');
    r = cli(['put', 'past', 'gone', '--expires-at-ms', String(Date.now() - 60_000), ...c]);
    assert.equal(r.code, 0, r.stderr);
    r = cli(['get', 'past', ...c]);
    assert.equal(r.code, 1, 'a deadline already passed: no value');
    assert.match(r.stderr, /has no value/);
    r = cli(['put', 'brief', 'v', '--ttl-ms', '1', ...c]);
    assert.equal(r.code, 0, r.stderr);
    for (let i = 0; (r = cli(['get', 'brief', ...c])).code === 0 && i < 100; i++); // gone once 1 ms passed on the primary's clock
    assert.equal(r.code, 1, 'a 1 ms TTL expires');
    r = cli(['put', 'k', 'v', '--ttl-ms', '10s', ...c]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--ttl-ms: '10s' is not a whole number of ms.*ROWAN_ERR_BAD_ARGUMENT/);
    r = cli(['put', 'k', 'v', '--ttl-ms', '0', ...c]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /ttlMs 0 is not a whole number of ms in 1\.\./);
    r = cli(['put', 'k', 'v', '--ttl-ms', '5', '--expires-at-ms', '5', ...c]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /not both/);
    r = cli(['get', 'k', ...c]);
    assert.equal(r.code, 1, 'no refused PUT wrote anything');
  } finally {
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
