// The node's main thread tells the configuration manager which shards the migration actor copied
// (actors/migration/copy.ts publishes them in ../shared/copy-reports.ts): `caughtUp` at once for a new
// report, and again every catchUpResendMs while the committed configuration still marks this node
// catching up on the shard from the same primary (the manager may have missed it: restarted, or a
// standby took over). The manager commits a term without the mark (actors/manager/healing.ts).
import type { Clock } from '../../config/base/clock.js';
import { isCatchingUp } from '../../config/cluster.js';
import { defaultTimings } from '../../config/timings.js';
import type { ConfigCell } from '../shared/config-cell.js';
import type { CopyReports } from '../shared/copy-reports.js';
import type { NodeToManager } from '../shared/manager-protocol.js';
import { MIGRATION_LOG_OWNER } from '../../config/base/ids.js';
import { OwnerRole } from '../../shm/pool.js';
import { TLog } from '../../shm/tlog.js';
import { CatchUp, type CatchUpDeps } from '../migration/copy.js';

/** How often the reports are looked at while the node catches up on a shard (ms): a copy is reported
 *  this soon after it finished. Otherwise only a new configuration wakes the loop (no idle polling). */
const LOOK_MS = 20;
const IDLE_MS = 60_000;

export class CopyReporter {
  private stopped = false;
  /** When each shard was last reported, and from which primary at which term. */
  private readonly sent = new Map<number, { at: number; key: string }>();

  constructor(
    private readonly nodeId: number,
    private readonly cell: ConfigCell,
    private readonly reports: CopyReports,
    private readonly clock: Clock,
    private readonly send: (m: NodeToManager) => void,
  ) {}

  start(): void {
    void (async () => {
      while (!this.stopped) {
        this.look();
        const catching = (this.cell.config().catchingUp ?? []).some((x) => x.node === this.nodeId);
        await this.cell.changed(catching ? LOOK_MS : IDLE_MS);
      }
    })();
  }

  stop(): void {
    this.stopped = true;
  }

  /** Report what is due; returns the shards reported. */
  look(): number[] {
    const c = this.cell.config();
    const out: number[] = [];
    for (const x of c.catchingUp ?? []) {
      if (x.node !== this.nodeId) continue;
      const r = this.reports.read(x.shard);
      if (!r || !isCatchingUp(c, x.shard, this.nodeId) || c.shards[x.shard]!.primary !== r.from) continue;
      const key = `${r.from}:${r.term}:${r.entries}`;
      const last = this.sent.get(x.shard);
      const now = this.clock.now();
      if (last && last.key === key && now - last.at < defaultTimings.catchUpResendMs) continue;
      this.sent.set(x.shard, { at: now, key });
      this.send({ t: 'caughtUp', node: this.nodeId, term: c.term, shard: x.shard, from: r.from, entries: r.entries, bytes: r.bytes, absorbed: r.absorbed, ms: r.ms });
      out.push(x.shard);
    }
    return out;
  }
}

/** The copies of a node without a migration actor, on the main thread: the migration log and read
 *  slot are this thread's then (no other thread uses them). Call onConfig() on every configuration. */
export function copyOnThisThread(d: Omit<CatchUpDeps, 'log'>): CatchUp {
  let log: TLog | null = null;
  return new CatchUp({ ...d, log: () => (log ??= TLog.recover(d.pool, MIGRATION_LOG_OWNER, d.limits, OwnerRole.Digest)) });
}
