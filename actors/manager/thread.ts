// Configuration manager actor (§4.5): grants leases to the cluster's nodes, detects a failed node and
// runs phase 1 of the failover (./manager.ts). `rowan manager` runs it alone in a process of its own,
// and `rowan cluster` starts that process before the nodes. Its start payload (ManagerStart) names the
// configuration store (the cluster file, or a znode in ZooKeeper), the port and the lease timing.
//
// With ZooKeeper, managers elect one active manager (./election.ts): this one joins the election and
// reports READY as a standby at once; elected, it reads the stored configuration, listens on its port
// (a standby does not: nodes try the next manager they know), publishes its address and acts while its
// election says it may. Its stores are fenced on its election znode. A lost session (the znode gone)
// stops the process: `rowan cluster` starts it again, as a standby. While ZooKeeper is unreachable the
// active manager stores nothing (failovers wait, retried each second) and keeps granting leases for
// VALID_SHARE of the session timeout; past that it pauses until ZooKeeper answers again.
import { loadTls } from '../../runtime/net/tls.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineActor, runActor, type ActorContext } from '../../runtime/actor.js';
import { FileConfigStore } from '../../config/store.js';
import { ZooKeeperConfigStore } from '../../config/zk-store.js';
import type { Logger } from '../../config/base/log.js';
import { LEASE_PRIORITY, raiseThreadPriority, type ThreadPriority } from '../../native/libc.js';
import { ConfigManager } from './manager.js';
import { leaseTiming, type LeaseTiming } from './leases.js';
import { ManagerElection } from './election.js';
import type { ManagerInbound, ManagerStart } from './protocol.js';
import { ALWAYS, type Activation } from './takeover.js';
import { DEFAULT_RESHARDING, type ReshardingOptions } from './reshard.js';
import { serveManager, type ManagerServer } from './manager-server.js';


/** --debug-pause failover-stored:MS, as the manager's activation takes it. */
function failoverPause(s: ManagerStart): Pick<Activation, 'pauseAfterStoreMs'> {
  return s.debugPause?.step === 'failover-stored' ? { pauseAfterStoreMs: s.debugPause.ms } : {};
}

/** The resharding options with --debug-pause move-stored|move-prepared|move-committed:MS as the moves take it. */
function reshardingOf(s: ManagerStart): ReshardingOptions | undefined {
  const p = s.debugPause;
  if (!p || p.step === 'failover-stored') return s.resharding;
  return { ...(s.resharding ?? { ...DEFAULT_RESHARDING, auto: false }), pauseAfter: { step: p.step.slice('move-'.length), ms: p.ms } };
}

let cm: ConfigManager | null = null;
let server: ManagerServer | null = null;
let zk: ZooKeeperConfigStore | null = null;
let election: ManagerElection | null = null;

function watchSession(store: ZooKeeperConfigStore, log: Logger): void {
  store.onSession((state) => {
    if (state === 'disconnected') log.warn({ zookeeper: store.connect }, `ZooKeeper session lost (${store.connect}): no configuration is stored until it is back; failovers wait`);
    else if (state === 'connected') log.info({ zookeeper: store.connect }, `ZooKeeper session with ${store.connect}`);
  });
}

/** Elected but unable to start acting (the port taken, ZooKeeper not answering) this many times in a
 *  row: give the election up (the process stops) so that a standby can take over. */
const ACTIVATE_ATTEMPTS = 5;

/** Elected: read the configuration, listen, publish the address. Retried (bounded) on failure. */
async function activate(ctx: ActorContext, s: ManagerStart, timing: LeaseTiming, takeover: boolean, giveUp: (why: string) => void): Promise<void> {
  const store = zk!;
  const e = election!;
  for (let attempt = 1; ; attempt++) {
    try {
      const initial = await store.read();
      if (!e.isActive()) return; // stopped meanwhile
      store.fenceOn(e.znode());
      cm = new ConfigManager(store, initial, timing, ctx.clock, ctx.log, (ms) => sleep(ms), {
        valid: () => e.isValid(),
        elected: true,
        takeover,
        ...failoverPause(s),
      }, reshardingOf(s));
      server = await serveManager(cm, s.host, s.port, ctx.log, ctx.secret, loadTls(ctx.config.tls));
      await e.publish({ host: s.host, port: server.port, pid: process.pid });
      ctx.log.warn(
        { event: 'active', port: server.port, term: initial.term, members: cm.members(), takeover, znode: e.znode(), sessionMs: store.grantedSessionTimeoutMs() },
        `active configuration manager (${e.znode()}) on ${s.host}:${server.port}, term ${initial.term}${takeover ? ': took over from the previous one; no node is failed before a full lease has passed' : ''}`,
      );
      return;
    } catch (err) {
      if (!e.isActive()) return;
      await server?.close();
      server = null;
      cm?.close();
      cm = null;
      if (attempt >= ACTIVATE_ATTEMPTS) return giveUp(`elected, but could not start acting in ${attempt} attempts: ${(err as Error).message}`);
      ctx.log.error({ err: (err as Error).message, attempt }, 'elected, but cannot start acting yet; trying again in 1 s');
      await sleep(1000);
    }
  }
}

async function startWithZooKeeper(ctx: ActorContext, s: ManagerStart, timing: LeaseTiming): Promise<void> {
  const store = await ZooKeeperConfigStore.open({ connect: s.zookeeper!.connect, path: s.zookeeper!.path, ...(s.zkSessionMs ? { sessionTimeoutMs: s.zkSessionMs } : {}) });
  zk = store;
  watchSession(store, ctx.log);
  await store.read(); // a cluster must be there before a manager waits to manage it
  const stop = (why: string) => {
    ctx.log.error({ event: 'lost' }, `no longer in the manager election: ${why}; stopping (a supervisor starts it again as a standby)`);
    election?.stop();
    cm?.close();
    void server?.close();
    process.exitCode = 3;
    process.kill(process.pid, 'SIGTERM');
  };
  election = new ManagerElection(store, s.zookeeper!.path, ctx.clock, ctx.log, {
    elected: (takeover) => void activate(ctx, s, timing, takeover, stop),
    valid: (ok) => {
      if (!ok) ctx.log.error({ event: 'paused' }, 'no answer from ZooKeeper within the validity window: this manager grants no lease and stores nothing until it answers again');
      else if (cm) cm.resume();
    },
    lost: stop,
  });
  const znode = await election.join({ host: s.host, port: s.port, pid: process.pid });
  ctx.log.info({ znode, port: s.port, ...timing, store: `zk://${store.connect}${store.path}` }, `configuration manager in the election as ${znode} (listens only once active)`);
}

/** The manager's thread grants every lease and runs every failover round: like a node's lease thread
 *  (actors/node/lease-thread.ts) it asks for SCHED_FIFO, else a negative nice, so that a lease's
 *  expiry and a round's next step are not late on a busy machine (its work is small: a grant, a plan,
 *  a store). ROWAN_LEASE_PRIORITY=0 leaves it ordinary. */
function raisePriority(log: Logger): void {
  if (process.env.ROWAN_LEASE_PRIORITY === '0') return;
  let p: ThreadPriority;
  try {
    p = raiseThreadPriority(LEASE_PRIORITY, -10);
  } catch (err) {
    p = { kind: 'none', level: 0, refused: [(err as Error).message] };
  }
  if (p.kind === 'fifo') log.info({ priority: p }, `configuration manager thread: SCHED_FIFO priority ${p.level}`);
  else log.warn({ priority: p }, `configuration manager thread: ${p.kind === 'nice' ? `nice ${p.level}` : 'ordinary priority'} (refused: ${p.refused.join('; ')}): lease expiries and failover rounds may wait for CPU on a busy machine`);
}

/** The longest an active manager goes without a periodic look, whatever its leases (at most
 *  runtime.idleTickMs). It was 50 ms: 20 wakeups a second of an idle manager for duties that wait on
 *  time by hundreds of ms (issue 26). */
const MANAGER_IDLE_TICK_MS = 200;

export const managerActor = defineActor<ManagerInbound>({
  role: 'manager',
  accepts: [],
  handlers: {},
  init: async (ctx) => {
    const s = ctx.app as ManagerStart;
    const timing = leaseTiming(s.leaseMs, s.renewMs, s.driftMs);
    raisePriority(ctx.log);
    if (s.zookeeper) {
      await startWithZooKeeper(ctx, s, timing);
      return { endpoint: { host: s.host, port: s.port } };
    }
    const file = new FileConfigStore(s.clusterFile);
    cm = new ConfigManager(file, file.readSync(), timing, ctx.clock, ctx.log, (ms) => sleep(ms), { ...ALWAYS, ...failoverPause(s) }, reshardingOf(s));
    server = await serveManager(cm, s.host, s.port, ctx.log, ctx.secret, loadTls(ctx.config.tls));
    ctx.log.info({ port: server.port, ...timing, term: cm.config().term, members: cm.members(), store: s.clusterFile }, `configuration manager listening on ${s.host}:${server.port}`);
    return { endpoint: { host: s.host, port: server.port } };
  },
  // Lease expiry is checked when the earliest lease could expire (at most 5 ms late); the other
  // periodic duties (a planned rebalance, a resume or reconfirm round waiting for time to pass) at
  // least every MANAGER_IDLE_TICK_MS.
  tickMs: () => 5,
  idleTickMs: (c) => Math.min(MANAGER_IDLE_TICK_MS, c.runtime.idleTickMs),
  tick: () => ({ inMs: cm?.tick() ?? Infinity }),
  drain: async () => {
    election?.stop();
    cm?.close();
    await server?.close();
    // Ends the session before the process exits: the election znode goes now, not a session timeout later.
    await zk?.closeAndWait();
    election = null;
    zk = null;
    server = null;
    cm = null;
  },
});

runActor(managerActor);
