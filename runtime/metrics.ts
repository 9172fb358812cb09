// Prometheus text exposition (format 0.0.4) of a node: `GET /metrics` on the node's metrics port. The
// runtime contributes what any actor application has (actor states and ring traffic, from the actors'
// shared counters); the application adds its own families (NodeApplication.metrics). Everything is
// read from shared memory when scraped: nothing is kept or allocated per request on the data path.
import { createServer, type Server } from 'node:http';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import type { Logger } from '../config/base/log.js';
import type { ActorStatus } from './status.js';
import type { MediaSnapshot } from './optane/media.js';

/** Builds exposition text: one HELP and TYPE line per family, then its samples. */
export class Exposition {
  private readonly lines: string[] = [];

  family(name: string, type: 'counter' | 'gauge' | 'histogram', help: string): this {
    this.lines.push(`# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`, `# TYPE ${name} ${type}`);
    return this;
  }

  sample(name: string, labels: Record<string, string | number>, value: number): this {
    const l = Object.entries(labels).map(([k, v]) => `${k}="${String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`);
    this.lines.push(`${name}${l.length ? `{${l.join(',')}}` : ''} ${Number.isFinite(value) ? value : value > 0 ? '+Inf' : 'NaN'}`);
    return this;
  }

  text(): string {
    return this.lines.join('\n') + '\n';
  }
}

const STATE_NUMBER: Record<string, number> = { starting: 0, ready: 1, stopping: 2, stopped: 3, failed: 4 };

/** The runtime's families: per actor, its state and its ring traffic. */
export function runtimeMetrics(e: Exposition, actors: ActorStatus[], uptimeMs: number): void {
  e.family('rowan_uptime_seconds', 'gauge', 'Seconds since the node started.').sample('rowan_uptime_seconds', {}, uptimeMs / 1000);
  e.family('rowan_actor_state', 'gauge', 'Actor state: 0 starting, 1 ready, 2 stopping, 3 stopped, 4 failed.');
  for (const a of actors) e.sample('rowan_actor_state', { actor: a.name, role: a.role }, STATE_NUMBER[a.state] ?? -1);
  for (const [field, name, help] of [
    ['MESSAGES_IN', 'rowan_actor_messages_in_total', 'Ring records an actor received.'],
    ['MESSAGES_OUT', 'rowan_actor_messages_out_total', 'Ring records an actor published.'],
    ['TICKS', 'rowan_actor_ticks_total', 'Periodic ticks an actor ran.'],
  ] as const) {
    e.family(name, 'counter', help);
    for (const a of actors) e.sample(name, { actor: a.name, role: a.role }, Number(a.counters[field] ?? 0));
  }
  e.family('rowan_actor_tick_wait_ms', 'gauge', 'Wait before the actor\'s next periodic tick: its period, stretched while idle (0: no tick).');
  for (const a of actors) e.sample('rowan_actor_tick_wait_ms', { actor: a.name, role: a.role }, Number(a.counters.TICK_WAIT_MS ?? 0));
}

/** The Optane media model's counters (pm.media optane, runtime/optane/). */
export function pmMediaMetrics(e: Exposition, m: MediaSnapshot): void {
  e.family('rowan_pm_request_bytes_total', 'counter', 'Bytes persisted into the pool, in whole 64 B cache lines (the modelled DIMMs\' request bytes).').sample('rowan_pm_request_bytes_total', {}, m.requestBytes);
  e.family('rowan_pm_media_bytes_total', 'counter', 'Bytes the modelled Optane media wrote (256 B XPLines).').sample('rowan_pm_media_bytes_total', {}, m.mediaBytes);
  e.family('rowan_pm_dlwa', 'gauge', 'Modelled device-level write amplification since start: media bytes / request bytes.').sample('rowan_pm_dlwa', {}, m.dlwa);
  e.family('rowan_pm_media_wait_seconds_total', 'counter', 'Time persisting threads waited for the modelled media.').sample('rowan_pm_media_wait_seconds_total', {}, m.waitMs / 1000);
}

/** Serve `collect()` on GET /metrics at host:port; resolves once listening (port 0: any free port). */
export async function serveMetrics(o: { host: string; port: number; collect: () => Promise<string>; log?: Logger }): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url !== '/metrics' && !req.url?.startsWith('/metrics?'))) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics here\n');
      return;
    }
    o.collect().then(
      (body) => res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(body),
      (err: unknown) => {
        o.log?.warn({ err: (err as Error).message }, 'metrics scrape failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`scrape failed: ${(err as Error).message}\n`);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new RowanError(ErrorCodes.BAD_ARGUMENT, `metrics cannot listen on ${o.host}:${o.port}: ${err.code ?? err.message}`)),
    );
    server.listen({ host: o.host, port: o.port }, () => resolve());
  });
  const addr = server.address();
  return { server, port: typeof addr === 'object' && addr ? addr.port : o.port };
}
