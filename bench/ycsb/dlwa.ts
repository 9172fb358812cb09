// Modelled DLWA of a finished cluster run, reconstructed from what landed in each node's PM.
//
// The nodes are separate processes, so their PM regions cannot be wrapped in a PersistTrace. What can
// be read afterwards is every node's pool.pm: each log segment still holds, in address order, the
// entries (t-logs: one append+persist per entry) or blocks (b-logs / remote logs: one landed write per
// block) written to it. So, per node, after the cluster stopped:
//  - every segment with an owner role is one write stream: Worker (t-log), Digest / Clean / Migration
//    (local logs of reassembled, cleaned or migrated entries) scanned with scanEntries; Control
//    (b-log for rowan, one remote log per sender for the one-sided modes, the per-worker b-logs of rpc)
//    scanned with scanBlogBlocks, which steps over holes;
//  - within a stream, the order is exact: address order is append / landing order;
//  - across streams, the order is a proxy for time: an entry's shard version, normalised per shard to
//    [0, 1) over the versions this node holds of that shard (a shard's versions grow with its PUTs, and
//    every replica writes the same versions). This assumes every shard's share of the node's PUTs stays
//    the same through the run, which the generators make roughly true (one key distribution for all
//    PUTs of a mode). The proxy is forced monotone within each stream (running maximum) so the merge
//    never reorders a stream.
// Each write becomes (pool offset, footprint bytes) and the merged sequence goes through the XPBuffer
// model (runtime/optane/xpbuffer.ts). Why this is a fair stand-in: in the model, DLWA comes from how many
// write streams are open at once and how far apart their writes land, not from exact timing; the
// reconstruction keeps every stream's exact address sequence and interleaves streams that were filled
// concurrently, so the stream count the replication mode creates (rowan: a t-log per worker + one
// b-log; rwrite: a log per remote worker) is what the model sees. It errs low where the real order was
// more scattered than the proxy's smooth interleave, for every mode alike. Not covered: segments freed
// by the cleaner and reused before the run ended (their first contents were overwritten), metadata
// writes (segment meta words, CommitVer), and index writes (DRAM).
import { join } from 'node:path';
import { defaultLimits } from '../../config/limits.js';
import { scanBlogBlocks } from '../../runtime/rowan/blog-scan.js';
import { poolFileName } from '../../runtime/pool-hook.js';
import { scanEntries } from '../../shm/log.js';
import { OwnerRole, Pool } from '../../shm/pool.js';
import { modelDlwa } from '../../runtime/optane/xpbuffer.js';

export interface NodeDlwa {
  node: number;
  writes: number;
  requestBytes: number;
  mediaBytes: number;
  dlwa: number;
  /** Segments holding writes (write streams over the run). */
  segments: number;
  /** Distinct logs: (role, owner) pairs holding writes. */
  logs: number;
}

interface Stream {
  offs: number[];
  lens: number[];
  shards: number[];
  versions: number[];
}

/** Reconstruct one node's PM write sequence from its pool and model its DLWA. */
export function nodeDlwa(dataDir: string, node: number): NodeDlwa {
  const pool = Pool.open(join(dataDir, poolFileName));
  try {
    const bytes = pool.region.bytes;
    const streams: Stream[] = [];
    const logs = new Set<string>();
    for (const seg of pool.segments()) {
      const m = pool.meta(seg);
      if (m.role === OwnerRole.None) continue;
      const start = pool.segmentOffset(seg);
      const end = start + pool.segmentBytes;
      const s: Stream = { offs: [], lens: [], shards: [], versions: [] };
      if (m.role === OwnerRole.Control || m.role === OwnerRole.Remote) {
        for (const b of scanBlogBlocks(bytes, start, end, defaultLimits)) {
          s.offs.push(b.offset); s.lens.push(b.size); s.shards.push(b.shard); s.versions.push(b.version);
        }
      } else {
        for (const e of scanEntries(bytes, start, end, defaultLimits)) {
          s.offs.push(e.offset); s.lens.push(e.bytes); s.shards.push(e.shard); s.versions.push(e.version);
        }
      }
      if (s.offs.length) {
        streams.push(s);
        logs.add(`${m.role}:${m.ownerId}`);
      }
    }
    // Per shard version range on this node.
    const lo = new Map<number, number>();
    const hi = new Map<number, number>();
    for (const s of streams)
      for (let i = 0; i < s.shards.length; i++) {
        const sh = s.shards[i]!;
        const v = s.versions[i]!;
        if (!(v >= (lo.get(sh) ?? Infinity))) lo.set(sh, v);
        if (!(v <= (hi.get(sh) ?? -Infinity))) hi.set(sh, v);
      }
    const n = streams.reduce((a, s) => a + s.offs.length, 0);
    const t = new Float64Array(n);
    const addrs = new Float64Array(n);
    const lens = new Uint32Array(n);
    let k = 0;
    for (const s of streams) {
      let run = 0;
      for (let i = 0; i < s.offs.length; i++, k++) {
        const sh = s.shards[i]!;
        const l = lo.get(sh)!;
        const proxy = (s.versions[i]! - l) / (hi.get(sh)! - l + 1);
        run = Math.max(run, proxy);
        t[k] = run;
        addrs[k] = s.offs[i]!;
        lens[k] = s.lens[i]!;
      }
    }
    // Stable sort by proxy time: equal times keep stream order, and each stream is monotone.
    const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => t[a]! - t[b]! || a - b);
    const r = modelDlwa(
      Float64Array.from(order, (i) => addrs[i]!),
      Uint32Array.from(order, (i) => lens[i]!),
    );
    return { node, writes: n, requestBytes: r.requestBytes, mediaBytes: r.mediaBytes, dlwa: r.dlwa, segments: streams.length, logs: logs.size };
  } finally {
    pool.close();
  }
}

/** All nodes of a stopped cluster; the aggregate is total media bytes / total request bytes. */
export function clusterDlwa(dataDirs: string[]): { dlwa: number; writes: number; segments: number; logs: number; nodes: NodeDlwa[] } {
  const nodes = dataDirs.map((d, i) => nodeDlwa(d, i));
  const req = nodes.reduce((a, x) => a + x.requestBytes, 0);
  const media = nodes.reduce((a, x) => a + x.mediaBytes, 0);
  return {
    dlwa: req > 0 ? media / req : NaN,
    writes: nodes.reduce((a, x) => a + x.writes, 0),
    segments: Math.max(...nodes.map((x) => x.segments)),
    logs: Math.max(...nodes.map((x) => x.logs)),
    nodes,
  };
}
