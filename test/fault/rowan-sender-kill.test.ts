// A sender SIGKILLed in the middle of Rowan writes leaves no torn entry that the receiver's b-log scan
// accepts: every block the scan yields is byte-identical to a block some sender meant to write, and the
// receiver keeps taking writes from the next sender. Many kills at random moments, multi-block entries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { defaultLimits } from '../../config/limits.js';
import { encodeBlocks } from '../../shm/log.js';
import { OwnerRole } from '../../shm/pool.js';
import { newBlogScanStats, scanBlogBlocks } from '../../runtime/rowan/blog-scan.js';
import { TestReceiver } from '../fixtures/rowan-receiver.js';
import { killEntry } from '../fixtures/rowan-kill-sender.js';

const child = new URL('../fixtures/rowan-kill-sender.js', import.meta.url).pathname;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

test('SIGKILLed shm senders leave no torn block that the b-log scan accepts', { timeout: 180_000 }, async () => {
  const kills = 40;
  // Big enough that nothing is recycled: every segment written stays scannable at the end.
  const rx = new TestReceiver({ segmentBytes: 1024 * 1024, segmentCount: 160, preallocate: 24, batch: 4, recycle: false });
  let tornSlots = 0;
  try {
    rx.start();
    for (let k = 0; k < kills; k++) {
      // Every other sender tears its write on purpose (half a block copied, then killed while hung);
      // the rest are killed wherever they happen to be.
      const tear = k % 2 === 1 ? 50 + Math.floor(Math.random() * 200) : -1;
      const p = fork(child, [rx.dataDir, String(k), String(tear)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
      // Taken now: a sender that ends by itself before the kill must not leave us waiting for an exit
      // event that already happened.
      const exited = new Promise((r) => p.once('exit', r));
      let tornAt = -1;
      const torn = new Promise<void>((resolve) => p.on('message', (m: { torn?: number }) => {
        if (m.torn !== undefined) {
          tornAt = m.torn;
          resolve();
        }
      }));
      // Its first entry landed whole: on a busy machine a fixed sleep alone could kill a sender that
      // had not written yet (a CI run saw 35 of 40 senders land anything).
      const landed = new Promise<void>((resolve) => p.on('message', (m: { landed?: boolean }) => {
        if (m.landed) resolve();
      }));
      await new Promise<void>((resolve, reject) => {
        p.once('message', () => resolve());
        p.once('exit', (code) => reject(new Error(`sender ${k} exited early (${code})`)));
      });
      if (tear >= 0) await torn;
      else await landed.then(() => sleep(Math.random() * 60));
      p.kill('SIGKILL');
      if (tornAt >= 0) tornSlots++;
      await exited;
    }
    rx.drain();
    const stats = newBlogScanStats();
    const perSender = new Map<number, number>();
    let checked = 0;
    let multi = 0;
    const bytes = rx.pool.region.bytes;
    for (const seg of rx.pool.segments({ role: OwnerRole.Control })) {
      const start = rx.pool.segmentOffset(seg);
      for (const b of scanBlogBlocks(bytes, start, start + rx.pool.segmentBytes, defaultLimits, stats)) {
        const want = encodeBlocks(killEntry(b.shard, b.version - 1), defaultLimits)[b.seq];
        assert.ok(want, `block seq ${b.seq} of sender ${b.shard} entry ${b.version - 1} should not exist`);
        assert.deepEqual(bytes.subarray(b.offset, b.offset + b.size), want, `block at ${b.offset} differs from what was sent`);
        perSender.set(b.shard, (perSender.get(b.shard) ?? 0) + 1);
        if (b.cnt > 1) multi++;
        checked++;
      }
    }
    console.log(
      `rowan sender kill: ${kills} kills, ${checked} blocks verified byte for byte (${multi} of multi-block entries) ` +
        `from ${perSender.size} senders; ${tornSlots} writes torn on purpose; ${stats.invalidStrides} non-zero strides rejected, ` +
        `${stats.zeroStrides} zero strides skipped`,
    );
    assert.ok(tornSlots >= kills / 2 - 2, `only ${tornSlots} torn writes were staged`);
    assert.ok(stats.invalidStrides >= tornSlots, `the scan met ${stats.invalidStrides} torn strides for ${tornSlots} torn writes`);
    assert.equal(perSender.size, kills, `only ${perSender.size} of ${kills} senders' writes were found by the scan`);
    assert.ok(multi > 0, 'no multi-block entries were exercised');
  } finally {
    rx.close();
  }
});
