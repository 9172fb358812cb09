// The lease exchange's message pattern alone, in plain Node, for the idle benchmark (../idle.bench.ts):
// what three nodes renewing every renew period cost when nothing else runs -- the floor for a lease
// carried by Node's event loop and net.Socket, measured in the same run as the cluster.
//   node lease-pattern.js server PORT         answers each 12-byte frame with 40 bytes (a grant)
//   node lease-pattern.js client PORT MS      sends a 12-byte frame (a renew) every MS on a setInterval
// One process each, like the manager and the nodes' lease threads; both ask for TCP_NODELAY.
// `raw-server` and `raw-client` do the same in a blocking loop of system calls (poll, read, write,
// clock_nanosleep through native/blocking-tcp.ts), no event loop: what the same messages cost when
// each wakeup is only the kernel's and a few koffi calls.
import net from 'node:net';
import { closeFd, PeriodicSleep, readSome, ReadablePoll, tcpAccept, tcpConnect, tcpListen, writeAll } from '../../native/blocking-tcp.js';

const RENEW_BYTES = 12;
const GRANT_BYTES = 40;

function server(port: number): void {
  const grant = Buffer.alloc(GRANT_BYTES);
  const srv = net.createServer((s) => {
    s.setNoDelay(true);
    let pending = 0;
    s.on('data', (b: Buffer) => {
      pending += b.length;
      for (; pending >= RENEW_BYTES; pending -= RENEW_BYTES) s.write(grant);
    });
    s.on('error', () => s.destroy());
  });
  srv.listen(port, '127.0.0.1', () => process.stdout.write('listening\n'));
}

function client(port: number, periodMs: number): void {
  const renew = Buffer.alloc(RENEW_BYTES);
  const s = net.connect(port, '127.0.0.1');
  s.setNoDelay(true);
  s.on('data', () => {});
  s.on('error', () => process.exit(1));
  s.on('connect', () => setInterval(() => s.write(renew), periodMs));
}

/** Accepts `clients` connections, then answers their renewals in a poll loop. */
function rawServer(port: number, clients: number): void {
  const listening = tcpListen('127.0.0.1', port);
  process.stdout.write('listening\n');
  const fds: number[] = [];
  while (fds.length < clients) fds.push(tcpAccept(listening));
  const grant = new Uint8Array(GRANT_BYTES);
  const buf = new Uint8Array(4096);
  const pending = new Map<number, number>(fds.map((fd) => [fd, 0]));
  const polled = new ReadablePoll(fds);
  for (;;) {
    polled.wait(-1, (fd) => {
      const n = readSome(fd, buf);
      if (n === 0) process.exit(0);
      let p = pending.get(fd)! + n;
      for (; p >= RENEW_BYTES; p -= RENEW_BYTES) writeAll(fd, grant);
      pending.set(fd, p);
    });
  }
}

/** A renewal every `periodMs` (to absolute instants), then its grant read. */
function rawClient(port: number, periodMs: number): void {
  const fd = tcpConnect('127.0.0.1', port);
  const renew = new Uint8Array(RENEW_BYTES);
  const buf = new Uint8Array(4096);
  const sleep = new PeriodicSleep(periodMs);
  for (;;) {
    sleep.next();
    writeAll(fd, renew);
    if (readSome(fd, buf) === 0) return closeFd(fd);
  }
}

const [role, port, arg] = process.argv.slice(2);
if (role === 'server') server(Number(port));
else if (role === 'client') client(Number(port), Number(arg));
else if (role === 'raw-server') rawServer(Number(port), Number(arg));
else if (role === 'raw-client') rawClient(Number(port), Number(arg));
else throw new Error(`usage: lease-pattern.js server PORT | client PORT MS | raw-server PORT CLIENTS | raw-client PORT MS (got ${process.argv.slice(2).join(' ')})`);
