// redis-cli as a person uses it: interactively, in a terminal (tmux plays the terminal: send-keys types,
// capture-pane reads the screen), on a single-endpoint port and with -c on a cluster port, where it
// follows MOVED to the node that owns the key.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { launchCluster, randomBasePort, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { haveRedisTools, readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';

const noTmux = spawnSync('tmux', ['-V']).status === 0 ? false : 'tmux is not installed (.ci/run installs it)';
const skip = haveRedisTools() || noTmux;
const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-tty-'));
const session = `rowan-redis-${process.pid}`;
let cl: LaunchedCluster | null = null;

function tmux(...args: string[]): string {
  const r = spawnSync('tmux', args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `tmux ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Wait (bounded) until the screen shows `want`. */
async function see(want: RegExp): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const screen = tmux('capture-pane', '-p', '-t', session);
    if (want.test(screen)) return screen;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the screen never showed ${want}:\n${tmux('capture-pane', '-p', '-t', session)}`);
}

/**
 * Type a line into the terminal and wait (bounded) until its answer shows `want` and redis-cli prompts
 * again. Only the screen below the typed line counts: an earlier line may match too (the SET before a
 * GET shows the value), and typing on before the answer came would go to a redis-cli still waiting.
 */
async function typeAndSee(line: string, want: RegExp): Promise<string> {
  tmux('send-keys', '-t', session, line, 'Enter');
  for (let i = 0; i < 100; i++) {
    const screen = tmux('capture-pane', '-p', '-t', session);
    const lines = screen.trimEnd().split('\n');
    let typed = lines.length - 1;
    while (typed >= 0 && !lines[typed]!.endsWith(`> ${line}`)) typed--;
    const answer = typed < 0 ? '' : lines.slice(typed + 1).join('\n');
    if (want.test(answer) && /> *$/.test(lines[lines.length - 1] ?? '')) return screen;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the screen never showed ${want} after typing '${line}':\n${tmux('capture-pane', '-p', '-t', session)}`);
}

before(async () => {
  if (skip) return;
  cl = launchCluster(dir, randomBasePort(), ['--shards', '12']);
  await cl.ready;
});

after(async () => {
  spawnSync('tmux', ['kill-session', '-t', session]);
  if (cl) await stopCluster(cl.child);
  rmSync(dir, { recursive: true, force: true });
});

test('interactive redis-cli on a single-endpoint port, then -c on a cluster port following MOVED', { skip }, async () => {
  const ports = respPorts(readCluster(dir));
  tmux('new-session', '-d', '-s', session, '-x', '160', '-y', '40', `REDISCLI_AUTH=${useClusterPassword(dir)} redis-cli -p ${ports.single[0]}`);
  await see(new RegExp(`127\\.0\\.0\\.1:${ports.single[0]}> *$`, 'm')); // the prompt: redis-cli is up
  await typeAndSee('PING', /PONG/);
  await typeAndSee('SET tty:greeting "hello there"', /OK/);
  await typeAndSee('GET tty:greeting', /"hello there"/);
  await typeAndSee('DEL tty:greeting tty:none', /\(integer\) 1/);
  await typeAndSee('NOSUCHCMD x', /ERR unknown command 'NOSUCHCMD'/);

  // Cluster mode: ask every cluster port; whichever node does not own the key redirects.
  for (const p of ports.cluster) {
    tmux('respawn-pane', '-k', '-t', session, `REDISCLI_AUTH=${useClusterPassword(dir)} redis-cli -c -p ${p}`);
    await see(new RegExp(`127\\.0\\.0\\.1:${p}> *$`, 'm'));
    await typeAndSee(`SET tty:k${p} v${p}`, /OK/);
    await typeAndSee(`GET tty:k${p}`, new RegExp(`"v${p}"`));
  }
  const screen = await typeAndSee('GET tty:greeting-gone', /\(nil\)/);
  assert.doesNotMatch(screen, /MOVED/, 'redis-cli -c follows MOVED instead of showing it');
});
