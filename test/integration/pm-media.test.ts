// A cluster whose nodes run with `pm.media: optane` (ROWAN_PM_MEDIA, passed on by rowan cluster):
// PUT/GET work through the media model, and a node reports the modelled DLWA and media bytes on
// GET /metrics, fed by its actors' persists (t-log appends, b-log landings).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { RowanClient } from '../../client/client.js';
import { waitFor } from '../fixtures/failover-cluster.js';

function metric(text: string, name: string): number {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  assert.ok(m, `${name} in the exposition`);
  return Number(m[1]);
}

test('a node with pm.media optane serves PUT/GET and reports the modelled DLWA', { timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-pm-media-'));
  const base = randomBasePort();
  process.env.ROWAN_PM_MEDIA = 'optane';
  const run = launchCluster(dir, base);
  delete process.env.ROWAN_PM_MEDIA;
  try {
    await run.ready;
    const client = await RowanClient.connect({ cluster: join(dir, 'cluster.json') });
    for (let i = 0; i < 300; i++) await client.put(`k${i}`, `value-${i}`.repeat(4));
    for (let i = 0; i < 300; i += 7) assert.equal((await client.get(`k${i}`))?.toString(), `value-${i}`.repeat(4));
    await client.close();
    const url = `http://127.0.0.1:${base + 800}/metrics`;
    let text = '';
    await waitFor('node 0 to report media bytes', async () => {
      text = await (await fetch(url)).text();
      return /^rowan_pm_media_bytes_total [1-9]/m.test(text);
    }, 30_000, 100);
    const request = metric(text, 'rowan_pm_request_bytes_total');
    const media = metric(text, 'rowan_pm_media_bytes_total');
    const dlwa = metric(text, 'rowan_pm_dlwa');
    console.log(`# node 0: request ${request} B, media ${media} B, DLWA ${dlwa.toFixed(3)}`);
    assert.ok(request >= 300 * 64 / 3, 'at least its share of the PUTs reached the model');
    assert.ok(Math.abs(dlwa - media / request) < 1e-9);
    assert.ok(dlwa >= 0.9 && dlwa <= 4, `DLWA ${dlwa} within what 64 B lines into 256 B XPLines can give`);
  } finally {
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
