// Erda's writer and reader on a real pool over shm: keys that overflow an index region's probes go to
// chained regions and still read back; overwrites read the newest; a torn newest object reads the one
// before it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultLimits } from '../../../../config/limits.js';
import { ShmConnection, shmPaths } from '../../../../runtime/fabric/shm.js';
import { SharedReceiveQueue } from '../../../../runtime/rowan/srq.js';
import { Pool } from '../../../../shm/pool.js';
import { encodeBlocks, EntryType } from '../../../../shm/log.js';
import { ErdaStream } from '../../../../actors/baselines/erda.js';
import { ErdaReader } from '../../../../actors/baselines/erda-reader.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));
const put = (key: string, value: string, version: number) => encodeBlocks({ type: EntryType.Put, shard: 0, version, key: enc(key), value: enc(value) }, defaultLimits)[0]!;

function server(segmentBytes: number, segmentCount: number): { dir: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-erda-unit-'));
  const p = shmPaths(dir);
  Pool.create(p.pool, { segmentCount, segmentBytes }).close();
  SharedReceiveQueue.create(p.srq, { postCap: 16, cqCap: 64 }).close();
  return { dir, done: () => rmSync(dir, { recursive: true, force: true }) };
}

test('erda: keys past one index region chain into the next; overwrites read newest; a torn newest reads the previous', async () => {
  const s = server(64 * 1024, 64);
  const conn = ShmConnection.connect(s.dir);
  try {
    const w = new ErdaStream(conn, { ownerId: 3 });
    await w.prepare();
    const keys = 6000; // 64 KiB regions hold 4092 slots: the index needs at least two
    let v = 1;
    for (let k = 0; k < keys; k++) await w.write(put(`k${k}`, `a${k}`, v++));
    for (let k = 0; k < keys; k += 3) await w.write(put(`k${k}`, `b${k}`, v++));
    assert.ok(w.index.regionCount >= 2, `index regions: ${w.index.regionCount}`);
    const r = new ErdaReader(conn, await w.index.first(), defaultLimits);
    for (let k = 0; k < keys; k++) assert.equal(dec((await r.get(enc(`k${k}`)))!.value), k % 3 === 0 ? `b${k}` : `a${k}`, `k${k}`);
    assert.equal(await r.get(enc('never-written')), null);
    // Tear k1's next object: its entry names it, only its first half lands.
    const torn = put('k1', 'c1', v++);
    torn.fill(0, torn.length >> 1);
    const slot = await w.index.place(enc('k1'));
    await w.log.append(torn, (at) => w.index.publish(slot, at));
    const got = await r.get(enc('k1'));
    assert.deepEqual({ value: dec(got!.value), fellBack: got!.fellBack }, { value: 'a1', fellBack: true });
    assert.equal(r.stats().fallbacks, 1);
  } finally {
    await conn.close();
    s.done();
  }
});
