// The main thread's side of the node's lease thread (./lease-thread.ts): it starts the thread, runs
// the follower of the manager's rounds (./config-follower.ts: it needs the pool mapping and the shard
// state, which live here), sends the node's reports (load, caughtUp) through the thread's connection,
// and hands the peer leases what they need. The lease itself is the thread's: it writes the cell.
import { Worker } from 'node:worker_threads';
import { gridDelayMs, realTimers, type Clock, type TimerHandle } from '../../config/base/clock.js';
import type { Logger, LogLevel } from '../../config/base/log.js';
import { gettid, ROUND_PRIORITY, setThreadRealtime, type ThreadPriority } from '../../native/libc.js';
import { closeFd, openEventFd, signalEventFd } from '../../native/nonblocking-tcp.js';
import type { TlsClientMaterial } from '../../runtime/net/tls.js';
import type { ConfigCell } from '../shared/config-cell.js';
import { encodeLine, type NodeToManager } from '../shared/manager-protocol.js';
import { ConfigFollower, type FollowerHooks } from './config-follower.js';
import { type LeaseThreadData, type LeaseThreadStart, type LeaseToMain, type MainToLease } from './lease-thread-protocol.js';
import { LoadReportGate, type ShardLoad } from '../shared/shard-load.js';

const entry = new URL('./lease-thread.js', import.meta.url);

/** What the node does on its main thread for the manager. */
export interface MainLeaseHooks extends FollowerHooks {
  /** Resharding statistics (§4.6): requests and writes per shard since the previous call. */
  load?(): ShardLoad[];
  /** Live bytes of each shard this node is primary of, flat (shard, bytes) pairs (issue 28: the
   *  membership balancing weighs bytes). */
  bytes?(): number[];
  /** The manager removed this node (the cell says so already). */
  evicted?(retired: boolean): void;
  /** Peer leases should look (../shared/peer-lease.ts PeerLeases.tick). */
  tick?(): void;
}

/** A lease thread spawned early in the node's start (its modules load meanwhile), not yet holding the
 *  lease: LeaseThread starts it. */
export interface SpawnedLeaseThread {
  worker: Worker;
  /** The scheduling priority the thread obtained (null until it says), for status. */
  priority: ThreadPriority | null;
  /** Signalled after each message posted to the thread (its poll loop wakes on it). */
  wakeFd: number;
}

export function spawnLeaseThread(nodeId: number, log: Logger): SpawnedLeaseThread {
  const wakeFd = openEventFd();
  const data: LeaseThreadData = { nodeId, logLevel: log.level as LogLevel, raisePriority: process.env.ROWAN_LEASE_PRIORITY !== '0', wakeFd, mainTid: gettid() };
  const t: SpawnedLeaseThread = { worker: new Worker(entry, { name: 'rowan-lease', workerData: data }), priority: null, wakeFd };
  t.worker.once('exit', () => closeFd(wakeFd)); // the thread polls it no more
  // Listened to from the spawn: the thread says its priority as soon as it runs.
  t.worker.on('message', (m: LeaseToMain) => {
    if (m.t === 'priority') t.priority = m.priority;
  });
  t.worker.on('error', (err) => log.fatal({ err: err.message }, 'the lease thread failed: this node renews its lease no more (it fences itself)'));
  t.worker.unref();
  return t;
}

export interface LeaseThreadOptions {
  managers: { host: string; port: number }[];
  nodeId: number;
  cell: ConfigCell;
  clock: Clock;
  log: Logger;
  hooks: MainLeaseHooks;
  rejoin: boolean;
  secret: Uint8Array | null;
  tls: TlsClientMaterial | null;
  /** How often the load statistics go to the manager (resharding.periodMs; paper: 500 ms). */
  loadPeriodMs: number;
  /** The thread, spawned early (spawnLeaseThread); absent: spawned now. */
  spawned?: SpawnedLeaseThread;
}

export class LeaseThread {
  private readonly worker: Worker;
  private readonly spawned: SpawnedLeaseThread;
  private readonly follower: ConfigFollower;
  private timing: { leaseMs: number; renewMs: number; driftMs: number } | null = null;
  private loadTimer: TimerHandle | undefined;
  private loadSentAt = 0;
  private readonly loadGate: LoadReportGate;
  constructor(private readonly o: LeaseThreadOptions) {
    this.loadGate = new LoadReportGate(o.loadPeriodMs);
    this.spawned = o.spawned ?? spawnLeaseThread(o.nodeId, o.log);
    this.worker = this.spawned.worker;
    this.worker.on('message', (m: LeaseToMain) => this.onMessage(m));
    this.follower = new ConfigFollower({
      nodeId: o.nodeId, cell: o.cell, clock: o.clock, log: o.log, timers: realTimers,
      hooks: {
        ...o.hooks,
        unconfirmed: () => this.unconfirmed(),
        // A commit may have confirmed held shards (a promotion) or let them go: the next hello says so.
        configured: () => {
          o.hooks.configured?.();
          this.unconfirmed();
        },
      },
      send: (m) => this.notify(m),
      timing: () => this.timing,
      urgent: (on) => this.urgent(on),
    });
  }

  /** The kernel refused SCHED_FIFO to this thread once: rounds run at its ordinary priority. */
  private realtimeRefused = process.env.ROWAN_LEASE_PRIORITY === '0';

  /** A failover's rounds on this (the main) thread run under SCHED_FIFO (./config-follower.ts urgent):
   *  requests are blocked meanwhile, and the failover waits for nothing else. */
  private urgent(on: boolean): void {
    if (this.realtimeRefused) return;
    if (setThreadRealtime(on, ROUND_PRIORITY) || !on) return;
    this.realtimeRefused = true;
    this.o.log.warn('the configuration rounds run at ordinary priority (SCHED_FIFO refused): a failover waits for CPU on a busy machine');
  }

  /** The scheduling priority the thread obtained (null until it says), for status. */
  get priority(): ThreadPriority | null {
    return this.spawned.priority;
  }

  /** Hold the lease from now on (the thread connects to the manager), and report load. */
  start(): void {
    const o = this.o;
    const start: LeaseThreadStart = { t: 'start', cell: o.cell.buffer, managers: o.managers, rejoin: o.rejoin, secret: o.secret, tls: o.tls, unconfirmed: o.hooks.unconfirmed?.() ?? [] };
    this.worker.postMessage(start);
    if (!this.o.hooks.load) return;
    this.loadSentAt = this.o.clock.now();
    this.scheduleLoad();
  }

  /** On the monotonic clock's grid, as ./lease-client.ts scheduleLoad. */
  private scheduleLoad(): void {
    this.loadTimer = realTimers.setTimeout(() => {
      this.sendLoad();
      this.scheduleLoad();
    }, gridDelayMs(this.o.clock.now(), this.o.loadPeriodMs));
    this.loadTimer.unref();
  }

  stop(): void {
    realTimers.clearTimeout(this.loadTimer);
    this.post({ t: 'stop' });
  }

  /** Tell the manager something (re-replication's caughtUp); dropped while disconnected. */
  notify(m: NodeToManager): void {
    this.post({ t: 'send', line: encodeLine(m) });
  }

  /** The manager's lease timing, once it granted a lease (peer leases use the same). */
  leaseTiming(): { leaseMs: number; renewMs: number; driftMs: number } | null {
    return this.timing;
  }

  /** The held shards, also told to the lease thread for its next hello. */
  private unconfirmed(): number[] {
    const held = this.o.hooks.unconfirmed?.() ?? [];
    this.post({ t: 'unconfirmed', shards: held });
    return held;
  }

  private post(m: MainToLease): void {
    this.worker.postMessage(m);
    signalEventFd(this.spawned.wakeFd);
  }

  /** Each period's sample; only the ones the gate lets through go to the manager (an idle node's
   *  standing empty report is not repeated: ../shared/shard-load.ts LoadReportGate). */
  private sendLoad(): void {
    const loads = this.o.hooks.load?.() ?? [];
    const now = this.o.clock.now();
    const periodMs = +(now - this.loadSentAt).toFixed(1); // since the last sample: a skipped one counted nothing
    this.loadSentAt = now;
    const term = this.o.cell.term();
    if (!this.loadGate.send(loads.length === 0, term, now)) return;
    const flat: number[] = [];
    for (const l of loads) flat.push(l.shard, l.reqs, l.writes);
    const bytes = this.o.hooks.bytes?.();
    this.notify({ t: 'load', node: this.o.nodeId, term, periodMs, loads: flat, ...(bytes ? { bytes } : {}) });
  }

  private onMessage(m: LeaseToMain): void {
    switch (m.t) {
      case 'priority':
        return; // kept by spawnLeaseThread's listener
      case 'timing':
        this.timing = { leaseMs: m.leaseMs, renewMs: m.renewMs, driftMs: m.driftMs };
        return;
      case 'round':
        return this.follower.onMessage(m.m);
      case 'tick':
        return this.o.hooks.tick?.();
      case 'evicted':
        realTimers.clearTimeout(this.loadTimer);
        this.o.hooks.tick?.(); // a last look: peer leases see the eviction and stop asking
        this.o.hooks.evicted?.(m.retired);
        return;
      case 'stopped':
        void this.worker.terminate();
        return;
    }
  }
}
