// A key command refused by a change of term runs again on the new view (actors/worker/resp/reroute.ts):
// only refusals that say "not applied" for routing (STALE_TERM, WRONG_SHARD, a forwarded -MOVED on a
// single-endpoint port) run again; outcome-unknown failures and other errors never do; past the bound
// the last refusal is the reply.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCodes, RowanError } from '../../../../../config/base/errors.js';
import { RespErr, type Reply } from '../../../../../runtime/resp/reply.js';
import type { RespContext } from '../../../../../actors/worker/resp/context.js';
import { rerouted } from '../../../../../actors/worker/resp/reroute.js';

function ctxOf(mode: 'single' | 'cluster', terms: number[]): { ctx: RespContext; waits: number[] } {
  let t = 0;
  const waits: number[] = [];
  const worker = {
    term: () => terms[Math.min(t, terms.length - 1)]!,
    now: () => performance.now(),
    configChanged: async (ms: number) => {
      waits.push(ms);
      t++;
      await new Promise((r) => setTimeout(r, ms));
    },
  };
  const ctx = { mode, worker, stats: { rerouted: 0 } } as unknown as RespContext;
  return { ctx, waits };
}

function runs(results: (Reply | Error)[]): { run: () => Promise<Reply>; calls: () => number } {
  let i = 0;
  return {
    run: () => {
      const r = results[Math.min(i++, results.length - 1)]!;
      return r instanceof Error ? Promise.reject(r) : Promise.resolve(r);
    },
    calls: () => i,
  };
}

const stale = new RowanError(ErrorCodes.STALE_TERM, 'request routed with term 1, this node is at term 2');

test('refused for a stale term, then served: the client gets the answer, one run again', async () => {
  const { ctx } = ctxOf('single', [1, 2]);
  const r = runs([stale, 'OK']);
  assert.equal(await rerouted(ctx, r.run), 'OK');
  assert.equal(r.calls(), 2);
  assert.equal(ctx.stats.rerouted, 1);
});

test('a forwarded -MOVED on a single-endpoint port runs again; on a cluster port it is the answer', async () => {
  const moved = new RespErr('MOVED 12 127.0.0.1:7001');
  const single = ctxOf('single', [3, 4]);
  const a = runs([moved, new RespErr('TRYAGAIN ROWAN_ERR_WRONG_SHARD shard 0 is served by node 1, not 0 (not applied)'), 'v']);
  assert.equal(await rerouted(single.ctx, a.run), 'v');
  assert.equal(a.calls(), 3);
  const cluster = ctxOf('cluster', [3, 4]);
  const b = runs([moved, 'v']);
  assert.equal(await rerouted(cluster.ctx, b.run), moved);
  assert.equal(b.calls(), 1);
});

test('outcome unknown and other errors are never run again', async () => {
  const { ctx } = ctxOf('single', [1, 2]);
  const unknown = new RowanError(ErrorCodes.OUTCOME_UNKNOWN, 'the lease expired while replicating');
  const u = runs([unknown, 'OK']);
  await assert.rejects(Promise.resolve(rerouted(ctx, u.run)), (e) => e === unknown);
  assert.equal(u.calls(), 1);
  const other = runs([new RespErr('UNKNOWN ROWAN_ERR_OUTCOME_UNKNOWN x (outcome unknown)'), 'OK']);
  assert.match((await rerouted(ctx, other.run) as RespErr).s, /^UNKNOWN/);
  assert.equal(other.calls(), 1);
});

test('a refusal that lasts: the last one is the reply, after a bounded wait on the view', async () => {
  const { ctx, waits } = ctxOf('single', [5]);
  const r = runs([stale]);
  const t0 = performance.now();
  await assert.rejects(Promise.resolve(rerouted(ctx, r.run)), (e) => e === stale);
  const took = performance.now() - t0;
  assert.ok(took >= 1900, `gave up after the bound (${took.toFixed(0)} ms)`);
  assert.ok(waits.length > 0 && waits.every((w) => w <= 50), 'each wait for the view is short');
});

test('a reply not refused is returned as it is, synchronously when it was', () => {
  const { ctx } = ctxOf('single', [1]);
  assert.equal(rerouted(ctx, () => 'PONG'), 'PONG');
  assert.equal(ctx.stats.rerouted, 0);
});
