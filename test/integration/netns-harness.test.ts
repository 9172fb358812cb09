// The partition harness itself (test/fixtures/netns.ts): hosts reach each other over the bridge; a cut
// of one host's bridge port stops its traffic while a direct link keeps its pair talking; a cut between
// two hosts only stops theirs; heals restore everything; a shaped link (shape) still carries traffic and
// its tx counter (txBytes) counts it; destroy() leaves no namespace or process; and
// namespaces left by a run that died (its pid in the name) are removed by the next lab.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { netnsUnavailable, NetnsLab, NETNS_PREFIX, removeLeftoverNamespaces } from '../fixtures/netns.js';

const unavailable = netnsUnavailable();
const PORT = 9000;

/** Starts a TCP server answering its host name in `host`'s namespace. */
function serve(lab: NetnsLab, host: string) {
  const code = `require('net').createServer((s) => s.end(${JSON.stringify(host)})).listen(${PORT}, ${JSON.stringify(lab.host(host).addr)}, () => console.log('up'))`;
  const child = lab.spawnNode(host, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
}

/** From `from`'s namespace: the name `to` answers with, or 'unreachable' within 1.5 s. */
function probe(lab: NetnsLab, from: string, to: string): string {
  const code = `const s = require('net').connect(${PORT}, ${JSON.stringify(lab.host(to).addr)}); let d = ''; s.on('data', (x) => (d += x)); s.on('end', () => { console.log(d); process.exit(0); }); s.on('error', () => { console.log('unreachable'); process.exit(0); }); setTimeout(() => { console.log('unreachable'); process.exit(0); }, 1500);`;
  const r = spawnSync('ip', ['netns', 'exec', lab.host(from).ns, process.execPath, '-e', code], { encoding: 'utf8' });
  return r.stdout.trim();
}

/** `to`'s name as seen from `from`: probes again (up to 5 times) while a busy machine makes the 1.5 s
 *  look like a cut, so only an answer, or five silences in a row, decides. */
function reach(lab: NetnsLab, from: string, to: string): string {
  let got = probe(lab, from, to);
  for (let i = 1; i < 5 && got === 'unreachable'; i++) got = probe(lab, from, to);
  return got;
}

test('the netns harness: bridge, cut and heal, pair cuts, direct links, cleanup of this and of dead runs', { timeout: 60_000, skip: unavailable ?? false }, async () => {
  // A leftover of a "dead run": a namespace named with a pid that is not alive.
  const deadPid = 2 ** 22 + 1; // above the largest pid_max Linux allows (2^22): never a live process
  const leftover = `${NETNS_PREFIX}-${deadPid}-000000-x`;
  spawnSync('ip', ['netns', 'add', leftover]);
  const lab = NetnsLab.create(['a', 'b', 'c']);
  try {
    assert.deepEqual(NetnsLab.present(`${NETNS_PREFIX}-${deadPid}`), [], 'the dead run\'s namespace was removed');
    assert.match(lab.host('a').addr, /^10\.77\.\d+\.10$/);
    await Promise.all(['a', 'b', 'c'].map((h) => serve(lab, h)));
    assert.equal(reach(lab, 'a', 'b'), 'b');
    assert.equal(reach(lab, 'c', 'a'), 'a');
    lab.directLink('c', 'a');
    lab.cut('a');
    assert.equal(lab.connected('a'), false);
    assert.equal(probe(lab, 'b', 'a'), 'unreachable', 'a is cut off the bridge');
    assert.equal(reach(lab, 'c', 'a'), 'a', 'the direct link still carries c <-> a');
    assert.equal(reach(lab, 'c', 'b'), 'b');
    lab.heal('a');
    assert.equal(lab.connected('a'), true);
    assert.equal(reach(lab, 'b', 'a'), 'a');
    lab.cutPair('a', 'b');
    assert.equal(probe(lab, 'a', 'b'), 'unreachable');
    assert.equal(probe(lab, 'b', 'a'), 'unreachable');
    assert.equal(reach(lab, 'a', 'c'), 'c', 'a pair cut leaves the rest');
    lab.healPair('a', 'b');
    assert.equal(reach(lab, 'b', 'a'), 'a');
    // A shaped link (the reshard benchmark's): a token bucket on b's eth0, and b still answers; b's tx
    // counter grows by at least what it sent (its name, and TCP's handshake and teardown).
    lab.shape('b', 50);
    const qdisc = spawnSync('tc', ['-n', lab.host('b').ns, 'qdisc', 'show', 'dev', 'eth0'], { encoding: 'utf8' }).stdout;
    assert.match(qdisc, /tbf .*rate 50Mbit/, qdisc);
    const tx0 = lab.txBytes('b');
    assert.ok(tx0 !== null, 'b\'s tx counter is readable');
    assert.equal(reach(lab, 'a', 'b'), 'b', 'a shaped link still carries b\'s answer');
    assert.ok(lab.txBytes('b')! > tx0 + 'b'.length, 'b\'s tx counter grew');
  } finally {
    await lab.destroy();
  }
  assert.deepEqual(NetnsLab.present(lab.prefix), [], 'every namespace of the lab is gone');
  assert.deepEqual(removeLeftoverNamespaces(), [], 'nothing of this process is left behind');
});

if (unavailable) console.log(`netns harness test skipped: ${unavailable}`);
