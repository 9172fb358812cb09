// The Rowan ordering test over shm (issue: "8 concurrent senders x 10^5 writes of mixed sizes land with
// no overlap, stride-aligned, strictly in posted-buffer order, every acked write present exactly once;
// buffer exhaustion and re-posting covered"). Senders are real worker_threads mapping the receiver's
// pool and receive queue; the receiver's control loop runs on this thread and never touches a write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { TestReceiver, verifyLanding } from '../fixtures/rowan-receiver.js';
import type { SenderJob } from '../fixtures/rowan-sender.js';

const senderScript = new URL('../fixtures/rowan-sender.js', import.meta.url);

function runThread(job: SenderJob, acks: SharedArrayBuffer): Promise<{ retries: number; noBufferWaits: number }> {
  return new Promise((resolve, reject) => {
    const w = new Worker(senderScript, { workerData: { job, acks } });
    w.once('message', (m: { ok: boolean; retries: number; noBufferWaits: number; code?: string; message?: string }) => {
      if (m.ok) resolve(m);
      else reject(new Error(`sender ${job.sender}: ${m.code}: ${m.message}`));
    });
    w.once('error', reject);
  });
}

test('8 concurrent shm senders x 100k mixed-size writes land sequentially, each exactly once', { timeout: 300_000 }, async () => {
  const senders = 8;
  const writes = 100_000;
  // 48 segments of 256 KiB (12 MiB) for ~8e5 writes of ~500 B (~400 MB): the pool recycles ~30 times.
  const rx = new TestReceiver({ segmentBytes: 256 * 1024, segmentCount: 48, preallocate: 16, batch: 4 });
  try {
    rx.start();
    const acks = new SharedArrayBuffer(senders * writes * 8);
    const t0 = performance.now();
    const results = await Promise.all(
      Array.from({ length: senders }, (_, s) =>
        runThread({ fabric: 'shm', dataDir: rx.dataDir, sender: s, writes, seed: 11, valueMax: 900 }, acks),
      ),
    );
    const secs = (performance.now() - t0) / 1000;
    rx.drain();
    const retries = results.reduce((a, r) => a + r.retries, 0);
    const noBuffer = results.reduce((a, r) => a + r.noBufferWaits, 0);
    const problems = verifyLanding(rx, new Float64Array(acks), senders, writes, retries);
    const st = rx.receiver.stats();
    console.log(
      `rowan shm ordering: ${senders * writes} writes in ${secs.toFixed(2)} s (${Math.round((senders * writes) / secs)} writes/s); ` +
        `segments handed off ${st.handedOff}, re-issues ${retries}, no-buffer waits ${noBuffer}, ` +
        `scan: ${rx.scan.blocks} blocks, ${rx.scan.zeroStrides} zero strides, ${rx.scan.invalidStrides} invalid strides`,
    );
    assert.deepEqual(problems, []);
    assert.ok(st.handedOff > rx.pool.segmentCount * 2, `pool should recycle: only ${st.handedOff} segments handed off`);
  } finally {
    rx.close();
  }
});
