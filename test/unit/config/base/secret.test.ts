// The cluster secret's file and checks (config/base/secret.ts): created 0600, refused when group or
// others may read it, compared in constant time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parsePassword, parseSecret, passwordMatches, passwordText, proof, readPasswordFile, readSecretFile, secretHex, writeNewPasswordFile, writeNewSecretFile } from '../../../../config/base/secret.js';

test('a new secret file is 0600, 64 hex characters, and reads back; an existing one is not overwritten', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-secret-'));
  try {
    const file = join(dir, 'secret');
    const s = writeNewSecretFile(file);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(s.length, 32);
    assert.deepEqual(readSecretFile(file), s);
    assert.throws(() => writeNewSecretFile(file), { code: 'ROWAN_ERR_DATA_DIR' });
    assert.notDeepEqual(writeNewSecretFile(join(dir, 'other')), s, 'random each time');
    chmodSync(file, 0o644);
    assert.throws(() => readSecretFile(file), { code: 'ROWAN_ERR_BAD_CONFIG', message: /mode 0644: group and others must not read it/ });
    writeFileSync(join(dir, 'bad'), 'not hex\n', { mode: 0o600 });
    assert.throws(() => readSecretFile(join(dir, 'bad')), { code: 'ROWAN_ERR_BAD_CONFIG', message: /64 hex characters/ });
    assert.throws(() => readSecretFile(join(dir, 'missing')), { code: 'ROWAN_ERR_BAD_CONFIG', message: /ENOENT/ });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a new client password file is 0600 and reads back; short, spaced or world-readable passwords are refused', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-password-'));
  try {
    const file = join(dir, 'client-password');
    const pw = writeNewPasswordFile(file);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.match(passwordText(pw), /^[0-9a-f]{64}$/);
    assert.deepEqual(readPasswordFile(file), pw);
    assert.throws(() => writeNewPasswordFile(file), { code: 'ROWAN_ERR_DATA_DIR', message: /client password file .*EEXIST/ });
    writeFileSync(join(dir, 'own'), 'correct-horse-battery-staple\n', { mode: 0o600 });
    assert.equal(passwordText(readPasswordFile(join(dir, 'own'))), 'correct-horse-battery-staple');
    chmodSync(file, 0o640);
    assert.throws(() => readPasswordFile(file), { code: 'ROWAN_ERR_BAD_CONFIG', message: /client password file .* mode 0640/ });
    assert.throws(() => parsePassword('short', 'x'), { code: 'ROWAN_ERR_BAD_CONFIG', message: /16-256 printable/ });
    assert.throws(() => parsePassword('with a space in the middle', 'x'), { code: 'ROWAN_ERR_BAD_CONFIG' });
    assert.throws(() => parsePassword('x'.repeat(257), 'x'), { code: 'ROWAN_ERR_BAD_CONFIG' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('passwords compare exactly; proofs depend on label and both nonces', () => {
  const s = parseSecret('ab'.repeat(32), 'test');
  const pw = parsePassword('Ab'.repeat(16), 'test');
  assert.ok(passwordMatches(pw, Buffer.from('Ab'.repeat(16))));
  assert.ok(!passwordMatches(pw, Buffer.from('AB'.repeat(16))), 'case matters');
  assert.ok(!passwordMatches(pw, Buffer.from('Ab'.repeat(16).slice(1))));
  assert.ok(!passwordMatches(pw, Buffer.from(secretHex(s))), 'the cluster secret is not the client password');
  const a = new Uint8Array(32).fill(1);
  const b = new Uint8Array(32).fill(2);
  const p = proof(s, 'x', a, b);
  assert.notDeepEqual(proof(s, 'y', a, b), p);
  assert.notDeepEqual(proof(s, 'x', b, a), p);
  assert.deepEqual(proof(s, 'x', a, b), p);
});
