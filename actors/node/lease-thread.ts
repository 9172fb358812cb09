// The node's lease thread (issue 26; DESIGN §5 puts the lease beside the b-log work, away from the
// data path): the lease client (./lease-client.ts) and its connection to the manager run here, on a
// thread that does nothing else, so that a stall of the node's main thread -- a promotion's b-log
// scan, a synchronous fsync, a GC pause of its heap -- delays no renewal. The thread asks for
// SCHED_FIFO (else a negative nice; else it says it runs unraised): on a busy 2-core machine an
// ordinary thread waited tens of ms to be scheduled, a real-time one about 2 ms.
//
// Spawned early in the node's start (its modules load and its priority is raised while the actors
// start); it holds the lease from the LeaseThreadStart message the node sends once it is ready.
//
// What it writes: the manager's lease into the configuration cell (LEASE, which every worker checks
// before serving and before acknowledging a write), the lease span, and the eviction. What it hands
// the main thread (./lease-thread-link.ts): the manager's prepare and commit (the follower runs
// there), the lease timing, a tick when the peer leases should look, the eviction. What it takes:
// lines for the manager, the held shards for the next hello.
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { monotonicClock } from '../../config/base/clock.js';
import { createLogger } from '../../config/base/log.js';
import { LEASE_PRIORITY, ROUND_PRIORITY, raiseThreadPriority, setThreadName, setThreadRealtime, type ThreadPriority } from '../../native/libc.js';
import { ConfigCell } from '../shared/config-cell.js';
import { askBelowMs } from '../shared/peer-lease.js';
import { LeaseClient, type LeaseSeams } from './lease-client.js';
import { LeaseReactor, reactorCanDial } from './lease-reactor.js';
import { type LeaseThreadData, type LeaseThreadStart, type LeaseToMain, type MainToLease } from './lease-thread-protocol.js';

/** The nice value tried when real-time is refused (SCHED_FIFO: LEASE_PRIORITY). */
const NICE = -10;

const d = workerData as LeaseThreadData;
const port = parentPort!;
const post = (m: LeaseToMain): void => port.postMessage(m);
const log = createLogger(d.logLevel, { node: d.nodeId, thread: 'lease' });
setThreadName('rowan-lease');

function raise(): ThreadPriority {
  if (!d.raisePriority) return { kind: 'none', level: 0, refused: ['not asked (ROWAN_LEASE_PRIORITY=0)'] };
  try {
    return raiseThreadPriority(LEASE_PRIORITY, NICE);
  } catch (err) {
    return { kind: 'none', level: 0, refused: [(err as Error).message] };
  }
}

const priority = raise();
if (priority.kind === 'fifo') log.info({ priority }, `lease thread: SCHED_FIFO priority ${priority.level}`);
else log.warn({ priority }, `lease thread: ${priority.kind === 'nice' ? `nice ${priority.level}` : 'ordinary priority'} (refused: ${priority.refused.join('; ')}): renewals may wait behind other work on a busy machine`);
post({ t: 'priority', priority });

/** The main thread runs a round under SCHED_FIFO from the moment it is posted, not from when its turn
 *  comes (it lowers itself when its rounds end, ./config-follower.ts urgent): on the busy 2-core
 *  machine a commit waited up to ~40 ms for an ordinary main thread. Given up once refused. */
let mayRaiseMain = d.raisePriority && d.mainTid > 0 && priority.kind === 'fifo';
function raiseMain(): void {
  if (!mayRaiseMain || setThreadRealtime(true, ROUND_PRIORITY, d.mainTid)) return;
  mayRaiseMain = false;
  log.warn({ tid: d.mainTid }, 'lease thread: could not raise the main thread for a round (SCHED_FIFO refused); it raises itself when the round reaches it');
}

/** The node is ready: hold the lease. */
function run(st: LeaseThreadStart): void {
  const cell = ConfigCell.attach(st.cell);
  let unconfirmed = st.unconfirmed;
  let tickedTerm = -1;

  /** A tick for the peer leases only when they have something to do (no wakeup of the main thread
   *  per renewal on an idle node): the manager's lease runs low, or the term changed (they start over). */
  const tick = (client: LeaseClient): void => {
    const t = client.leaseTiming();
    const term = cell.term();
    const low = t !== null && client.managerLeaseUntil() - clock.now() < askBelowMs(t);
    if (!low && term === tickedTerm) return;
    tickedTerm = term;
    post({ t: 'tick' });
  };

  // Plain TCP: the thread's own poll loop (./lease-reactor.ts), woken by the main thread's eventfd;
  // TLS (or a manager named by a host name): Node's event loop, as before.
  const reactor = reactorCanDial(st.managers, st.tls) ? new LeaseReactor(clock, d.wakeFd, () => drain()) : null;
  const seams: LeaseSeams = { follow: (m) => (raiseMain(), post({ t: 'round', m })), ...(reactor ? { timers: reactor, dial: reactor.dial } : {}) };
  const client: LeaseClient = new LeaseClient(st.managers, d.nodeId, cell, clock, log, {
    unconfirmed: () => unconfirmed,
    evicted: (retired) => post({ t: 'evicted', retired }),
    tick: () => tick(client),
    timing: (t) => post({ t: 'timing', leaseMs: t.leaseMs, renewMs: t.renewMs, driftMs: t.driftMs }),
  }, st.rejoin, st.secret, st.tls, undefined, seams);

  const onMessage = (m: MainToLease): void => {
    switch (m.t) {
      case 'send':
        return client.notifyLine(m.line);
      case 'unconfirmed':
        unconfirmed = m.shards;
        return;
      case 'stop':
        client.stop();
        reactor?.stop();
        post({ t: 'stopped' });
        port.close();
        return;
    }
  };
  /** The reactor's wakeup: every message the main thread posted since the last. */
  const drain = (): void => {
    for (let r = receiveMessageOnPort(port); r !== undefined; r = receiveMessageOnPort(port)) onMessage(r.message as MainToLease);
  };
  client.start();
  if (reactor === null) return void port.on('message', onMessage);
  log.info('lease thread: renewing from its own poll loop (plain TCP, no event loop)');
  drain(); // what came before the loop
  reactor.run();
}

const clock = monotonicClock;
port.once('message', (m: LeaseThreadStart | MainToLease) => {
  if (m.t === 'start') return run(m);
  // Stopped before it started (the node stopped while starting).
  post({ t: 'stopped' });
  port.close();
});
