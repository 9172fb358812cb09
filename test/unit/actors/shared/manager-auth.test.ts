// The configuration manager's connection handshake (actors/shared/manager-auth.ts), both sides driven by
// hand: the same secret authenticates both ways; a wrong secret fails on whichever side checks first;
// a node with a secret refuses a manager without one (and the other way round); a lease message before
// the handshake, and a proof replayed on another connection, are refused. Regression tests for
// "anyone who reaches the manager's port can hold or break leases".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManagerAuthGate, NodeAuthHandshake } from '../../../../actors/shared/manager-auth.js';

const SECRET = new Uint8Array(32).fill(0x21);
const WRONG = new Uint8Array(32).fill(0x22);
const parse = (line: string): unknown => JSON.parse(line);

/** Run the handshake to its end: 'ok', or the code that stopped it and the side that stopped it. */
function run(cm: Uint8Array | null, node: Uint8Array | null): { result: string; by: 'cm' | 'node' | null; gate: ManagerAuthGate } {
  const gate = new ManagerAuthGate(cm);
  const n = new NodeAuthHandshake(node, 'test');
  let toCm: string | null = n.hello();
  for (let i = 0; i < 4 && toCm !== null; i++) {
    let answers: string[];
    try {
      answers = gate.accept(parse(toCm));
    } catch (e) {
      return { result: (e as { code: string }).code, by: 'cm', gate };
    }
    toCm = null;
    for (const a of answers) {
      try {
        const next = n.onMessage(parse(a));
        if (next === null) return { result: 'ok', by: null, gate };
        toCm = next;
      } catch (e) {
        return { result: (e as { code: string }).code, by: 'node', gate };
      }
    }
  }
  return { result: 'stuck', by: null, gate };
}

test('the same secret authenticates both sides; without secrets on both sides it is open', () => {
  const r = run(SECRET, SECRET);
  assert.equal(r.result, 'ok');
  assert.ok(r.gate.authed);
  assert.equal(run(null, null).result, 'ok');
});

test('a wrong secret is caught by the node (the manager proves first); mismatched auth settings are refused', () => {
  assert.deepEqual([run(SECRET, WRONG).result, run(SECRET, WRONG).by], ['ROWAN_ERR_AUTH_FAILED', 'node']);
  // A node with a secret does not follow a manager that proves none.
  assert.deepEqual([run(null, SECRET).result, run(null, SECRET).by], ['ROWAN_ERR_AUTH_FAILED', 'node']);
  // A manager with a secret tells a node without one that it needs it.
  assert.deepEqual([run(SECRET, null).result, run(SECRET, null).by], ['ROWAN_ERR_NOAUTH', 'node']);
});

test('the manager refuses lease messages before the handshake, a wrong proof, and a proof replayed on another connection', () => {
  const gate = new ManagerAuthGate(SECRET);
  assert.throws(() => gate.accept({ t: 'renew', node: 1, seq: 1, term: 1 }), { code: 'ROWAN_ERR_NOAUTH' });
  assert.throws(() => gate.accept({ t: 'hello', node: 1, pid: 1, term: 1 }), { code: 'ROWAN_ERR_NOAUTH' });
  assert.ok(!gate.authed);
  // An impostor that checks nothing and sends a made-up proof.
  const g2 = new ManagerAuthGate(SECRET);
  g2.accept({ t: 'auth-hello', nonce: '00'.repeat(32) });
  assert.throws(() => g2.accept({ t: 'auth', proof: 'ab'.repeat(32) }), { code: 'ROWAN_ERR_AUTH_FAILED' });
  // Record a good node's proof on one connection, replay it on another: the manager's nonce differs.
  const first = new ManagerAuthGate(SECRET);
  const node = new NodeAuthHandshake(SECRET, 'test');
  const hello = parse(node.hello());
  const proofLine = node.onMessage(parse(first.accept(hello)[0]!))!;
  const replay = new ManagerAuthGate(SECRET);
  replay.accept(hello);
  assert.throws(() => replay.accept(parse(proofLine)), { code: 'ROWAN_ERR_AUTH_FAILED' });
  assert.deepEqual(first.accept(parse(proofLine)).map(parse), [{ t: 'auth-ok', auth: true }], 'on its own connection the proof is good');
});
