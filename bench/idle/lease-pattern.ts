// The lease exchange's message pattern alone, in plain Node, for the idle benchmark (../idle.bench.ts):
// what three nodes renewing every renew period cost when nothing else runs -- the floor for a lease
// carried by Node's event loop and net.Socket, measured in the same run as the cluster.
//   node lease-pattern.js server PORT         answers each 12-byte frame with 40 bytes (a grant)
//   node lease-pattern.js client PORT MS      sends a 12-byte frame (a renew) every MS on a setInterval
// One process each, like the manager and the nodes' lease threads; both ask for TCP_NODELAY.
import net from 'node:net';

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

const [role, port, ms] = process.argv.slice(2);
if (role === 'server') server(Number(port));
else if (role === 'client') client(Number(port), Number(ms));
else throw new Error(`usage: lease-pattern.js server PORT | client PORT MS (got ${process.argv.slice(2).join(' ')})`);
