// The node's connection to the configuration manager (§4.5), on the node's main thread, for the lease
// client (./lease-client.ts): dial, prove the cluster secret and check the manager's proof
// (../shared/manager-auth.ts), reconnect, and move between managers.
//
// Each connection first completes the handshake; only then does the lease client say hello and renew.
// A refused handshake is logged once and retried every authRetryMs (the node's lease meanwhile runs
// out: it fences itself). Several managers (a standby, actors/manager/election.ts): the node is given
// all their addresses and holds its lease with whichever answers. A standby does not listen, so a
// refused or lost connection moves on to the next address; so does a connection whose handshake is not
// completed within noGrantMs or on which no grant came for noGrantMs after it (a manager that lost its
// election or is paused), as long as another address is there to try. A connection that looks open
// but says nothing for two leases gets a second connection beside it (reconnectIfSilent). The
// timings: config/timings.ts; noGrantMs grows to two renew periods of the lease in force, so a healthy
// manager is never left.
import { RowanError } from '../../config/base/errors.js';
import { NodeAuthHandshake } from '../shared/manager-auth.js';
import { defaultTimings, noGrantMsFor } from '../../config/timings.js';
import type { Clock, TimerHandle, Timers } from '../../config/base/clock.js';
import type { Logger } from '../../config/base/log.js';
import type { TlsClientMaterial } from '../../runtime/net/tls.js';
import { encodeLine, type ManagerToNode, type NodeToManager } from '../shared/manager-protocol.js';
import { ManagerStreamReader, RenewWriter } from '../shared/manager-frames.js';

/** The connection to a manager, as the lease client uses it (a net.Socket or tls.TLSSocket). */
export interface LeaseSocket {
  on(event: string, fn: (...args: any[]) => void): unknown; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** A JSON line, or a binary frame (../shared/manager-frames.ts). */
  write(data: string | Uint8Array): unknown;
  destroy(): unknown;
  /** Bytes written but not yet handed to the kernel (a net.Socket says; absent: a frame buffer is
   *  never reused). */
  readonly writableLength?: number;
}

/** Open a connection to a manager; `ready` names the event the socket emits once connected. */
export type DialManager = (to: { host: string; port: number; noDelay: boolean }, tls: TlsClientMaterial | null) => { socket: LeaseSocket; ready: string };

/** One connection attempt to one manager, from the dial to its close. */
interface Attempt {
  s: LeaseSocket;
  manager: { host: string; port: number };
  /** Several managers to try: a silent one is left for the next sooner. */
  multi: boolean;
  reader: ManagerStreamReader<ManagerToNode>;
  /** What the reader hands each message to (one closure per connection, not per chunk). */
  each: (m: ManagerToNode) => void;
  auth: NodeAuthHandshake;
  authed: boolean;
  /** How long after a close the next attempt waits (longer after a refused handshake). */
  retryMs: number;
  connecting: TimerHandle;
  deadline: TimerHandle | undefined;
}

/** What the link tells the lease client. */
export interface LinkEvents {
  /** A connection was authenticated and is now the node's (say hello, renew, report load);
   *  `watchGrants` starts the check that leaves a manager that grants nothing (with several). */
  up(watchGrants: () => void): void;
  /** The node's connection closed (stop renewing until the next is up). */
  down(): void;
  message(m: ManagerToNode): void;
}

export interface LinkDeps {
  managers: { host: string; port: number }[];
  clock: Clock;
  timers: Timers;
  log: Logger;
  dial: DialManager;
  /** The cluster secret this node proves to the manager; null = none (--no-auth). */
  secret: Uint8Array | null;
  /** Mutual TLS to the manager (this node's certificate, the CA); null = plain TCP. */
  tls: TlsClientMaterial | null;
  /** The lease in force, once granted (connection and grant timeouts follow it). */
  timing(): { leaseMs: number; renewMs: number } | null;
  events: LinkEvents;
}

export class ManagerLink {
  private socket: LeaseSocket | null = null;
  /** A first connection being made; a second one made beside a silent `socket`; the old one of
   *  those, closed once the manager answers on its replacement. */
  private dialing: LeaseSocket | null = null;
  private replacing: LeaseSocket | null = null;
  private retiring: LeaseSocket | null = null;
  /** When the manager last said anything on the current connection (own clock). */
  private heardAt = 0;
  private silent = false;
  private stopped = false;
  /** The manager tried next (an index into managers), and when the current connection was last granted. */
  private next = 0;
  private grantedAt = 0;
  private watchdog: TimerHandle | undefined;
  /** The manager of the current connection sent a framed grant: renewals go as frames. */
  private framed = false;
  private readonly renews = new RenewWriter();
  /** The last handshake failure logged (each distinct one is logged once, not at every retry). */
  private authFailure = '';
  private readonly managers: { host: string; port: number }[];
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly log: Logger;

  constructor(private readonly d: LinkDeps) {
    this.managers = d.managers;
    this.clock = d.clock;
    this.timers = d.timers;
    this.log = d.log;
  }

  start(): void {
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    this.timers.clearInterval(this.watchdog);
    for (const x of [this.socket, this.dialing, this.replacing, this.retiring]) x?.destroy();
  }

  send(m: NodeToManager): void {
    this.socket?.write(encodeLine(m));
  }

  /** A message encoded already (encodeLine); dropped while no connection is up, like send(). */
  sendLine(line: string): void {
    this.socket?.write(line);
  }

  /** A renew: a binary frame once the manager granted in frames on this connection, else a line. */
  renew(node: number, seq: number, term: number): void {
    const s = this.socket;
    if (s === null) return;
    const b = this.framed ? this.renews.renew(node, seq, term) : null;
    if (b === null) return void s.write(encodeLine({ t: 'renew', node, seq, term }));
    s.write(b);
    this.renews.sent(s.writableLength);
  }

  /** A grant came on the current connection (the grant watchdog counts from it). */
  granted(): void {
    this.grantedAt = this.clock.now();
  }

  /**
   * No word from the manager for `silentMs` on a connection that looks open: the path to it may be
   * broken (a partition drops packets; TCP would retransmit with a growing backoff for minutes and,
   * after the heal, resume seconds late). A second connection is tried, again each renew period until
   * one works (connect(true)). Checked again after the event loop has read its sockets (setImmediate):
   * timers run before I/O, so after a stall of this thread grants already waiting in the socket would
   * look missing.
   */
  reconnectIfSilent(silentMs: number): void {
    if (this.clock.now() - this.heardAt <= silentMs) return;
    const s = this.socket;
    this.timers.setImmediate(() => {
      const ms = this.clock.now() - this.heardAt;
      if (this.socket !== s || ms <= silentMs) return;
      if (!this.silent) {
        this.silent = true;
        this.log.warn({ ms: +ms.toFixed(0) }, 'no word from the configuration manager for two leases: trying a new connection (serving on peer leases meanwhile, if every other member grants one)');
      }
      this.connect(true);
    });
  }

  /**
   * Connect to the manager. `replace`: a second connection beside the current one, which looks dead
   * (renew()); the current one is closed only once the manager answered on the new one, so it has
   * taken the new connection as this node's before it sees the old one close (a close is a failure
   * hint to it), and nothing is closed while the manager cannot be reached at all.
   */
  private connect(replace = false): void {
    if (this.stopped) return;
    if (replace && this.replacing !== null) return;
    const manager = this.managers[this.next % this.managers.length]!;
    this.next = (this.next + 1) % this.managers.length;
    const { socket: s, ready } = this.d.dial({ host: manager.host, port: manager.port, noDelay: true }, this.d.tls);
    if (replace) this.replacing = s;
    else this.dialing = s;
    const a: Attempt = {
      s, manager, multi: this.managers.length > 1,
      reader: new ManagerStreamReader<ManagerToNode>(),
      auth: new NodeAuthHandshake(this.d.secret, `${manager.host}:${manager.port}`),
      authed: false,
      retryMs: defaultTimings.reconnectMs,
      // A manager that cannot be reached (a partition drops the SYN) is tried again, not waited for.
      connecting: this.timers.setTimeout(() => s.destroy(), this.d.timing()?.leaseMs ?? defaultTimings.managerConnectTimeoutMs),
      deadline: undefined,
      each: (m) => {
        if (a.authed) return this.d.events.message(m); // a grant frame is one object the reader reuses: only its numbers are kept
        const next = a.auth.onMessage(m);
        if (next === null) this.authenticated(a);
        else s.write(next);
      },
    };
    a.deadline = this.handshakeDeadline(a);
    s.on(ready, () => {
      this.timers.clearTimeout(a.connecting);
      s.write(a.auth.hello());
    });
    s.on('data', (chunk: Buffer) => this.onData(a, chunk));
    s.on('error', () => {});
    s.on('close', () => this.onClose(a));
  }

  /**
   * A manager that never answers the handshake (an old one ignores auth-hello; a paused one accepts in
   * the kernel and says nothing) must not hold the node silently: give up after the manager's own
   * handshake deadline and retry -- with another manager to try, after noGrantMs and at once there.
   */
  private handshakeDeadline(a: Attempt): TimerHandle {
    const { s, manager, multi } = a;
    const handshakeMs = multi ? Math.min(noGrantMsFor(defaultTimings, this.d.timing()?.renewMs ?? null), defaultTimings.managerHandshakeMs) : defaultTimings.managerHandshakeMs;
    return this.timers.setTimeout(() => {
      if (a.authed) return;
      if (multi) {
        this.log.warn({ manager: `${manager.host}:${manager.port}` }, `lease: the configuration manager at ${manager.host}:${manager.port} did not complete the authentication handshake within ${handshakeMs} ms; trying the next one`);
        s.destroy();
        return;
      }
      a.retryMs = defaultTimings.authRetryMs;
      const why = `the configuration manager at ${manager.host}:${manager.port} did not complete the authentication handshake within ${handshakeMs} ms`;
      if (why !== this.authFailure) this.log.error(`lease: ${why}; retrying every ${defaultTimings.authRetryMs} ms`);
      this.authFailure = why;
      s.destroy();
    }, handshakeMs).unref();
  }

  /** Bytes from the manager: the handshake until it completes, then its messages. */
  private onData(a: Attempt, chunk: Buffer): void {
    const s = a.s;
    if (a.authed && this.socket === s && this.retiring !== null) {
      const old = this.retiring;
      this.retiring = null;
      old.destroy();
    }
    this.heardAt = this.clock.now();
    if (this.silent) {
      this.silent = false;
      this.log.warn('the configuration manager answers again');
    }
    try {
      a.reader.push(chunk, a.each);
      if (a.reader.framed && this.socket === s) this.framed = true;
    } catch (err) {
      if (!a.authed && err instanceof RowanError) {
        a.retryMs = defaultTimings.authRetryMs;
        if (err.message !== this.authFailure) this.log.error({ code: err.code }, `lease: ${err.message}; retrying every ${defaultTimings.authRetryMs} ms`);
        this.authFailure = err.message;
      } else this.log.error({ err: (err as Error).message }, 'lease: bad message from the manager; reconnecting');
      s.destroy();
    }
  }

  /** The manager proved the secret: this connection becomes the node's (the old one retires). */
  private authenticated(a: Attempt): void {
    const { s, manager } = a;
    a.authed = true;
    this.timers.clearTimeout(a.deadline);
    if (this.authFailure !== '') this.log.info('lease: the configuration manager accepted this node');
    this.authFailure = '';
    if (this.dialing === s) this.dialing = null;
    if (this.replacing === s) this.replacing = null;
    const old = this.socket;
    if (old !== null && old !== s) {
      this.retiring?.destroy();
      this.retiring = old; // closed at the first answer on `s` after its hello
    }
    this.socket = s;
    this.framed = a.reader.framed;
    this.heardAt = this.clock.now();
    this.grantedAt = this.clock.now();
    this.next = this.managers.indexOf(manager); // this one answered: come back to it first
    this.d.events.up(() => {
      if (a.multi) this.watchGrants(s, manager);
    });
  }

  /** With several managers: connected but not granted for two renew periods, try the next one. */
  private watchGrants(s: LeaseSocket, manager: { host: string; port: number }): void {
    this.timers.clearInterval(this.watchdog);
    this.watchdog = this.timers.setInterval(() => {
      const noGrantMs = noGrantMsFor(defaultTimings, this.d.timing()?.renewMs ?? null); // two renew periods of the lease in force, at least
      if (this.socket !== s || this.clock.now() - this.grantedAt < noGrantMs) return;
      this.log.warn({ manager: `${manager.host}:${manager.port}` }, `no lease grant from the manager at ${manager.host}:${manager.port} for ${noGrantMs} ms; trying the next one`);
      this.next = (this.managers.indexOf(manager) + 1) % this.managers.length;
      s.destroy();
    }, defaultTimings.noGrantMs / 4);
    this.watchdog.unref();
  }

  private onClose(a: Attempt): void {
    const s = a.s;
    this.timers.clearTimeout(a.connecting);
    this.timers.clearTimeout(a.deadline);
    if (this.replacing === s) return void (this.replacing = null); // renew() tries again
    if (this.retiring === s) return void (this.retiring = null); // replaced: nothing to do
    if (this.dialing === s) this.dialing = null;
    else if (this.socket === s) {
      this.socket = null;
      this.timers.clearInterval(this.watchdog);
      this.d.events.down();
    } else return;
    if (!this.stopped) this.timers.setTimeout(() => this.connect(), a.retryMs).unref();
  }

}
