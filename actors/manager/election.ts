// Electing one active configuration manager among several (DESIGN §6: a standby CM) through ZooKeeper,
// the classic recipe: every manager creates an ephemeral sequential znode under
//     /rowan/<cluster>/managers/cm-<guid>-<seq>     data: {"host", "port", "pid"}
// and the lowest sequence number is active. The guid finds the manager's own znode again when the
// answer to its create was lost with the connection (the znode may exist; an unknown one of ours
// would hold the election until our session ends). A standby watches only its predecessor (no herd when the
// active one goes) and looks again when that znode goes away. The active manager then publishes its
// address in the ephemeral znode /rowan/<cluster>/manager, which `rowan status` reads; nodes find it by
// trying the managers they were given in turn (a standby does not listen: actors/node/lease-client.ts).
//
// Why one manager cannot act while another is active -- the timing argument (docs/running.md "ZooKeeper"):
//   * B becomes active only once A's election znode is gone, i.e. once ZooKeeper ended A's session:
//     A closed it, or the server heard nothing from A for the session timeout S. The server expires a
//     session no earlier than S after the last request it received from it.
//   * A counts itself active only until okAt + VALID_SHARE x S, where okAt is when A *sent* the last
//     request the server answered (a heartbeat `exists` on its own znode every S / HEARTBEATS_PER_SESSION).
//     That request reached the server after okAt, so A stops granting leases and pushing
//     configurations before the server can expire its session -- before B can be elected -- as long
//     as the two clocks disagree on an interval of S by less than (1 - VALID_SHARE) x S. Then:
//   * every lease A granted ends (node clock) at t_send + leaseMs - driftMs with t_send < the end of A's
//     validity < B's activation; B grants nothing before it is active and fails no node it has not
//     heard from before activation + leaseMs + driftMs (./leases.ts, LeaseTable.startedAt), so no lease
//     of A's is ever cut short and no shard is reassigned while a node may still serve it.
//   * A configuration A stores is a versioned setData in one transaction with a check that A's election
//     znode exists (config/zk-store.ts fenceOn): once A's session ended, A stores nothing, not even
//     from a new session. Configurations are one chain of terms (compare-and-set on the term), so B
//     reading the stored one sees every configuration A stored.
//   * A manager whose session expired has lost its znode for good: it stops (the process exits; a
//     supervisor -- `rowan cluster` -- starts it again as a new standby). One whose validity lapsed with
//     the session still open (ZooKeeper restarting, the network slow) only pauses: it grants nothing
//     until a heartbeat succeeds again, then resumes as if it had just taken over (./manager.ts resume).
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../config/base/clock.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Logger } from '../../config/base/log.js';
import type { ZooKeeperConfigStore } from '../../config/zk-store.js';

/** Heartbeats (an `exists` on the manager's own znode) per session timeout. */
export const HEARTBEATS_PER_SESSION = 6;
/** The active manager acts until this share of the session timeout after its last answered heartbeat. */
export const VALID_SHARE = 0.75;

export interface ManagerAddress {
  host: string;
  port: number;
  pid: number;
}

export interface ElectionEntry extends ManagerAddress {
  /** The election znode's name (cm-0000000003). */
  name: string;
  active: boolean;
}

/** The znode paths of a cluster whose configuration is at `configPath` (/rowan/<name>/config). */
export function electionPaths(configPath: string): { dir: string; active: string } {
  const base = configPath.slice(0, configPath.lastIndexOf('/'));
  return { dir: `${base}/managers`, active: `${base}/manager` };
}

/** The election's znode names in sequence order (the server's 10-digit suffix), lowest first. */
export function electionOrder(names: string[]): string[] {
  return names.filter((n) => /^cm-.*\d{10}$/.test(n)).sort((a, b) => Number(a.slice(-10)) - Number(b.slice(-10)));
}

/** Every manager in the election, lowest (the active one, or the one becoming it) first. */
export async function listManagers(zk: ZooKeeperConfigStore, configPath: string): Promise<ElectionEntry[]> {
  const p = electionPaths(configPath);
  if ((await zk.exists(p.dir)) === null) return [];
  const names = electionOrder(await zk.children(p.dir));
  const activeData = await zk.dataOf(p.active);
  const active = activeData ? parseAddress(activeData) : null;
  const out: ElectionEntry[] = [];
  for (const name of names) {
    const d = await zk.dataOf(`${p.dir}/${name}`);
    const a = d ? parseAddress(d) : null;
    if (a) out.push({ ...a, name, active: active !== null && active.pid === a.pid && active.port === a.port && active.host === a.host });
  }
  return out;
}

function parseAddress(d: Buffer): ManagerAddress | null {
  try {
    const a = JSON.parse(d.toString('utf8')) as ManagerAddress;
    return typeof a.host === 'string' && typeof a.port === 'number' && typeof a.pid === 'number' ? a : null;
  } catch {
    return null;
  }
}

export interface ElectionEvents {
  /** This manager is now the active one. `observedActive`: another manager was active while this one
   *  waited (a takeover of a running cluster, not a cold start). */
  elected(observedActive: boolean): void;
  /** Validity lapsed (false) or came back (true) while active, the session still open. */
  valid(ok: boolean): void;
  /** The session (and with it this manager's znode) is gone: stop for good. */
  lost(why: string): void;
}

export class ManagerElection {
  private readonly paths: { dir: string; active: string };
  private mine: string | null = null;
  private active = false;
  private okAt = -Infinity;
  private wasValid = false;
  private observedActive = false;
  private watching = '';
  private stopped = false;
  private heartbeat: NodeJS.Timeout | undefined;
  /** A standby also looks again every session timeout: a watch lost with a connection must not leave it
   *  waiting forever. */
  private recheck: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly zk: ZooKeeperConfigStore,
    configPath: string,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly events: ElectionEvents,
  ) {
    this.paths = electionPaths(configPath);
  }

  /** Join the election (bounded: ROWAN_ERR_ZOOKEEPER if ZooKeeper cannot be reached). */
  async join(me: ManagerAddress): Promise<string> {
    this.unsubscribe = this.zk.onSession((s) => {
      if (s === 'expired' && !this.stopped) this.lose(`ZooKeeper session expired (election znode ${this.mine} is gone)`);
    });
    await this.zk.ensurePath(this.paths.dir);
    const prefix = `cm-${randomUUID().slice(0, 8)}-`;
    try {
      this.mine = await this.zk.createEphemeral(`${this.paths.dir}/${prefix}`, Buffer.from(JSON.stringify(me)), true);
    } catch (err) {
      // The answer may have been lost with the connection: the znode is ours if it carries our guid.
      const found = (await this.zk.children(this.paths.dir)).find((n) => n.startsWith(prefix));
      if (!found) throw err;
      this.mine = `${this.paths.dir}/${found}`;
    }
    this.log.info({ znode: this.mine }, `joined the manager election as ${this.mine}`);
    this.recheck = setInterval(() => void this.look(), Math.max(1000, this.zk.grantedSessionTimeoutMs()));
    this.recheck.unref();
    void this.look();
    return this.mine;
  }

  /** Active and within the validity window: may grant leases and push configurations. */
  isValid(): boolean {
    return this.active && !this.stopped && this.clock.now() < this.okAt + VALID_SHARE * this.zk.grantedSessionTimeoutMs();
  }

  isActive(): boolean {
    return this.active && !this.stopped;
  }

  /** The election znode (the store's write fence once active). */
  znode(): string | null {
    return this.mine;
  }

  /** Publish the active manager's address (ephemeral: gone with this session). */
  async publish(addr: ManagerAddress): Promise<void> {
    // A znode left by a previous active manager lives only as long as that manager's session, which
    // ended before this one was elected; an old one still there belongs to no live session.
    await this.zk.remove(this.paths.active);
    await this.zk.createEphemeral(this.paths.active, Buffer.from(JSON.stringify(addr)), false);
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.heartbeat);
    clearInterval(this.recheck);
    this.unsubscribe?.();
  }

  private lose(why: string): void {
    if (this.stopped) return;
    this.stop();
    this.events.lost(why);
  }

  /** Active if lowest; otherwise watch the predecessor and look again when it changes. */
  private async look(): Promise<void> {
    if (this.stopped || this.active || !this.mine) return;
    const name = this.mine.slice(this.paths.dir.length + 1);
    try {
      const t0 = this.clock.now();
      const names = electionOrder(await this.zk.children(this.paths.dir));
      if (this.stopped) return; // stopped (the process drains) while the answer was on its way
      if (!names.includes(name)) return this.lose(`election znode ${this.mine} is gone`);
      const i = names.indexOf(name);
      if (i === 0) {
        if (this.active) return; // two looks raced
        clearInterval(this.recheck);
        this.okAt = t0;
        this.active = true;
        this.wasValid = true;
        this.startHeartbeat();
        this.events.elected(this.observedActive);
        return;
      }
      if ((await this.zk.exists(this.paths.active)) !== null) this.observedActive = true;
      const pred = `${this.paths.dir}/${names[i - 1]}`;
      // One watch per predecessor: a recheck of the same one registers none (watchers would pile up).
      const there = pred === this.watching ? await this.zk.exists(pred) : await this.zk.exists(pred, () => {
        this.watching = '';
        void this.look();
      });
      if (!there) {
        this.watching = '';
        return void this.look(); // gone between the two calls
      }
      if (pred !== this.watching) this.log.info({ znode: this.mine, watching: pred }, `standby: ${pred} is ahead; watching it`);
      this.watching = pred;
    } catch (err) {
      // No session (ZooKeeper down): look again; an expired session ends this election (lose()).
      this.log.warn({ err: (err as Error).message }, 'manager election: ZooKeeper unavailable; looking again in 1 s');
      setTimeout(() => void this.look(), 1000).unref();
    }
  }

  private startHeartbeat(): void {
    const every = Math.max(50, Math.floor(this.zk.grantedSessionTimeoutMs() / HEARTBEATS_PER_SESSION));
    let inFlight = false;
    this.heartbeat = setInterval(() => {
      this.checkValidity();
      if (inFlight || this.stopped) return;
      inFlight = true;
      const sent = this.clock.now();
      this.zk
        .exists(this.mine!)
        .then((st) => {
          if (st === null) return this.lose(`election znode ${this.mine} is gone (session ended)`);
          const sid = this.zk.sessionIdHex();
          if (sid !== null && st.ephemeralOwner !== sid) return this.lose(`election znode ${this.mine} belongs to an ended session`);
          this.okAt = Math.max(this.okAt, sent);
          this.checkValidity();
        }, () => {})
        .finally(() => (inFlight = false));
    }, every);
    this.heartbeat.unref();
  }

  private checkValidity(): void {
    const ok = this.isValid();
    if (ok === this.wasValid) return;
    this.wasValid = ok;
    this.events.valid(ok);
  }
}

/** A refusal for a manager that is not the active one. */
export function notActive(what: string): RowanError {
  return new RowanError(ErrorCodes.NOT_ACTIVE_MANAGER, `${what}: this configuration manager is not the active one`);
}
