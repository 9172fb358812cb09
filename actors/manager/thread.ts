// Configuration manager actor (§4.5): grants leases to the cluster's nodes, detects a failed node and
// runs phase 1 of the failover (./manager.ts). `rowan manager` runs it alone in a process of its own,
// and `rowan cluster` starts that process before the nodes. Its start payload (ManagerStart) names the
// configuration store (the cluster file, or a znode in ZooKeeper), the port and the lease timing.
//
// With ZooKeeper, a lost session (the server down, the network gone) means the manager stores no new
// configuration: the store refuses every write with ROWAN_ERR_ZOOKEEPER until the session is back, so a
// failover waits (the manager retries it each second) and nothing is committed that is not stored. An
// expired session is replaced by a new one; if the stored term has moved past the manager's own
// meanwhile (another manager stored a configuration), this manager stops rather than act on a stale one.
import { loadTls } from '../../runtime/net/tls.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineActor, runActor } from '../../runtime/actor.js';
import { FileConfigStore, type ConfigStore } from '../../config/store.js';
import { ZooKeeperConfigStore } from '../../config/zk-store.js';
import type { ClusterConfig } from '../../config/cluster.js';
import type { Logger } from '../../config/base/log.js';
import { ConfigManager } from './manager.js';
import { leaseTiming } from './leases.js';
import type { ManagerInbound, ManagerStart } from './protocol.js';
import { serveManager, type ManagerServer } from './server.js';

let cm: ConfigManager | null = null;
let server: ManagerServer | null = null;
let zk: ZooKeeperConfigStore | null = null;

async function openStore(s: ManagerStart, log: Logger): Promise<{ store: ConfigStore; initial: ClusterConfig }> {
  if (!s.zookeeper) {
    const file = new FileConfigStore(s.clusterFile);
    return { store: file, initial: file.readSync() };
  }
  const store = await ZooKeeperConfigStore.open({ connect: s.zookeeper.connect, path: s.zookeeper.path });
  zk = store;
  let expired = false;
  store.onSession((state) => {
    if (state === 'disconnected') log.warn({ zookeeper: store.connect }, `ZooKeeper session lost (${store.connect}): no configuration is stored until it is back; failovers wait`);
    else if (state === 'expired') (expired = true), log.warn({ zookeeper: store.connect }, 'ZooKeeper session expired; opening a new one');
    else if (state === 'connected') {
      log.info({ zookeeper: store.connect }, `ZooKeeper session with ${store.connect}`);
      // A new session after an expired one: another manager may have stored a configuration meanwhile.
      if (!expired) return;
      expired = false;
      void store.read().then((stored) => {
        const mine = cm?.config().term ?? stored.term;
        if (stored.term > mine) {
          log.error({ stored: stored.term, mine }, `the configuration in ZooKeeper moved to term ${stored.term} past this manager's ${mine}: stopping this manager`);
          cm?.close();
          process.kill(process.pid, 'SIGTERM');
        }
      }, () => {});
    }
  });
  return { store, initial: await store.read() };
}

export const managerActor = defineActor<ManagerInbound>({
  role: 'manager',
  accepts: [],
  handlers: {},
  init: async (ctx) => {
    const s = ctx.app as ManagerStart;
    const { store, initial } = await openStore(s, ctx.log);
    const timing = leaseTiming(s.leaseMs, s.renewMs, s.driftMs);
    cm = new ConfigManager(store, initial, timing, ctx.clock, ctx.log, (ms) => sleep(ms), s.resharding);
    server = await serveManager(cm, s.host, s.port, ctx.log, ctx.secret, loadTls(ctx.config.tls));
    const where = s.zookeeper ? `zk://${s.zookeeper.connect}${s.zookeeper.path}` : s.clusterFile;
    ctx.log.info({ port: server.port, ...timing, term: cm.config().term, members: cm.members(), store: where }, `configuration manager listening on ${s.host}:${server.port}`);
    return { endpoint: { host: s.host, port: server.port } };
  },
  // Lease expiry is checked a few times per renewal period.
  tickMs: () => 5,
  tick: () => cm?.tick(),
  drain: async () => {
    cm?.close();
    await server?.close();
    zk?.close();
    zk = null;
    server = null;
    cm = null;
  },
});

runActor(managerActor);
