// Fuzz target 'nic-verbs': the soft NIC's access rules (actors/nic/nic-verbs.ts) under arbitrary WRITE, READ
// and ALLOC requests of three peers on an in-memory pool. Whatever the bytes ask, a READ that succeeds
// lies inside one region ALLOC handed to the asking peer's node, a WRITE changes no byte outside such a
// region (one that fails changes none at all), ALLOC never takes the GC reserve nor a foreign owner id
// nor more than a node's quota of regions, and every refusal is a RowanError with a stable code.
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { scaleRemoteToPool } from '../../config/defaults.js';
import type { PoolRegion } from '../../config/base/region.js';
import { NicMemory, newNicPeer, type NicPeer } from '../../actors/nic/nic-verbs.js';
import { OwnerRole, Pool, SegmentState } from '../../shm/pool.js';
import { poolGeometry } from '../../shm/pool-layout.js';
import { FuzzViolation, type FuzzTarget } from './target.js';

const SEG = 4096;
const SEGMENTS = 8;
const RESERVE = 2;
const REFUSALS: readonly string[] = [ErrorCodes.NOT_GRANTED, ErrorCodes.BAD_ARGUMENT, ErrorCodes.PM_FULL, ErrorCodes.QUOTA];
/** A node's regions at most (the default quota: a quarter of the pool). */
const QUOTA = scaleRemoteToPool(SEGMENTS);

class DramRegion implements PoolRegion {
  readonly mode = 'memory' as const;
  readonly bytes: Uint8Array;
  constructor(readonly size: number) {
    this.bytes = new Uint8Array(new SharedArrayBuffer(size));
  }
  persist(): void {}
  flush(): void {}
  drain(): void {}
  close(): void {}
}

function violation(ok: boolean, what: string): void {
  if (!ok) throw new FuzzViolation(what);
}

/** Whether [off, +len) lies inside one live Remote region of node `node`. */
function inRegionOf(pool: Pool, node: number, off: number, len: number): boolean {
  if (off < pool.dataOffset || off >= pool.poolBytes) return false;
  const seg = pool.segmentOf(off);
  const m = pool.meta(seg);
  return off + len <= pool.segmentOffset(seg) + pool.segmentBytes && m.role === OwnerRole.Remote && m.ownerId === node && m.state !== SegmentState.Free;
}

export const nicVerbs: FuzzTarget = {
  name: 'nic-verbs',
  // Requests of 8 bytes: op (0 WRITE, 1 READ, 2 ALLOC), peer, offset u32, length (ALLOC: owner) u16.
  // The seed: node 0 allocates (segment 0) and writes and reads it; node 1 tries the same; node 1
  // allocates its own; node 0 reads across the segment end.
  corpus: [
    (() => {
      const at = poolGeometry(SEG, SEGMENTS).dataOffset;
      const req = (op: number, peer: number, off: number, len: number) => [op, peer, off & 0xff, (off >>> 8) & 0xff, (off >>> 16) & 0xff, off >>> 24, len & 0xff, len >>> 8];
      return Uint8Array.from([
        ...req(2, 0, 0, 0), ...req(0, 0, at + 64, 128), ...req(1, 0, at + 64, 64), ...req(1, 1, at + 64, 64),
        ...req(0, 1, at, 64), ...req(2, 1, 0, 1), ...req(1, 0, at + SEG - 32, 64), ...req(1, 2, at, 1),
      ]);
    })(),
  ],
  run(input) {
    const g = poolGeometry(SEG, SEGMENTS);
    const pool = Pool.onRegion(new DramRegion(g.poolBytes), { segmentBytes: SEG, segmentCount: SEGMENTS });
    pool.region.bytes.fill(0xc3, g.dataOffset);
    const mem = new NicMemory({ dataDir: '/nonexistent', pool: () => pool, frameBytesMax: 1 << 16, now: () => 0, reserveSegments: RESERVE });
    const peers: NicPeer[] = [0, 1, 2].map((id) => ({ ...newNicPeer(), nodeId: id === 2 ? null : id }));
    // At most 64 requests per input (each WRITE compares the whole pool before and after).
    for (let i = 0; i + 8 <= Math.min(input.length, 8 * 64); i += 8) {
      const op = input[i]! % 3;
      const who = input[i + 1]! % 3;
      const peer = peers[who]!;
      // Offsets span the whole pool and a little beyond; the low bits land near segment edges.
      const raw = (input[i + 2]! | (input[i + 3]! << 8) | (input[i + 4]! << 16) | (input[i + 5]! << 24)) >>> 0;
      const off = raw % (g.poolBytes + 2 * SEG);
      const len = input[i + 6]! | (input[i + 7]! << 8);
      try {
        if (op === 0) {
          const before = pool.region.bytes.slice();
          try {
            mem.write(peer, off, new Uint8Array(len).fill(0x5a));
          } catch (e) {
            violation(Buffer.compare(before, pool.region.bytes) === 0, `a refused WRITE [${off}, +${len}) changed the pool`);
            throw e;
          }
          violation(peer.nodeId !== null && inRegionOf(pool, peer.nodeId, off, len), `peer ${who} wrote [${off}, +${len}) outside its regions`);
        } else if (op === 1) {
          const got = mem.read(peer, off, len);
          violation(peer.nodeId !== null && inRegionOf(pool, peer.nodeId, off, len), `peer ${who} read [${off}, +${len}) outside its regions`);
          violation(got.length === len, 'READ returned a different length');
        } else {
          const r = mem.alloc(peer, len % 4);
          violation(peer.nodeId === len % 4 && pool.meta(r.segment).ownerId === peer.nodeId, `peer ${who} allocated for owner ${len % 4}`);
          violation(pool.freeCount() >= RESERVE, 'ALLOC took the GC reserve');
          violation(pool.segments({ role: OwnerRole.Remote, ownerId: len % 4 }).length <= QUOTA, `node ${peer.nodeId} holds more than its quota`);
        }
      } catch (e) {
        if (e instanceof FuzzViolation) throw e;
        if (!(e instanceof RowanError && REFUSALS.includes(e.code))) throw e;
        violation(!/\[\d+, \d+\)|pool's segments/.test(e.message), `a refusal leaks the pool layout: ${e.message}`);
      }
    }
  },
  expected: (e) => e instanceof RowanError && REFUSALS.includes(e.code),
  refuses: false,
};
