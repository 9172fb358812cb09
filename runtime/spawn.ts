// The main-thread side of an actor (piscina's WorkerInfo): spawn the worker_thread that hosts it
// (./actor-host.ts; one actor, or several sharing the thread), send each its startup message on a
// MessagePort of its own, wait for READY, stop it, and turn every way it can die into one 'failed'
// event carrying a RowanError with a stable code. Actors sharing a thread share its fate: a failure
// terminates the thread, and the others then fail as having exited unasked.
import { EventEmitter } from 'node:events';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { ErrorCodes, RowanError, fromRecord } from '../config/base/errors.js';
import type { ActorToParent, HostData, HostStart, ReadyReport, StartMessage } from './lifecycle.js';

const HOST_ENTRY = new URL('./actor-host.js', import.meta.url);

export interface SpawnSpec {
  /** The role's thread.ts, compiled (a file: URL to a .js module). */
  entry: URL;
  start: Omit<StartMessage, 'type'>;
  readyTimeoutMs: number;
}

/**
 * Events: 'failed' (err: RowanError) once, when a READY actor throws, reports failure or exits without
 * being asked to; 'exit' (code) when its thread is gone.
 */
export class ActorHandle extends EventEmitter {
  readonly name: string;
  readonly role: string;
  readonly id: number;
  readonly cores: number[];
  /** The thread it runs on: its own name, or the name of the thread it shares (./placement.ts). */
  thread: string;
  ready: ReadyReport | undefined;
  /** Resolves with the thread's exit code once it is gone. */
  readonly exited: Promise<number>;
  private stopRequested = false;
  private failure: RowanError | undefined;

  constructor(
    readonly worker: Worker,
    readonly spec: SpawnSpec,
    /** This actor's lifecycle messages (READY, failed, stopped; stop). */
    private readonly port: MessagePort,
  ) {
    super();
    this.name = spec.start.name;
    this.role = spec.start.role;
    this.id = spec.start.id;
    this.cores = spec.start.cores;
    this.thread = spec.start.thread ?? spec.start.name;
    // Gone: it reported 'stopped' and closed its port (a thread it shares lives on), or its thread
    // exited (with the thread's exit code: 1 when terminated).
    let stopped = false;
    this.exited = new Promise((resolve) => {
      port.once('close', () => stopped && resolve(0));
      worker.once('exit', resolve);
    });
    port.on('message', (m: ActorToParent) => {
      if (m.type === 'failed') this.failWith(fromRecord(m.error));
      else if (m.type === 'stopped') stopped = true;
      else this.emit('lifecycle', m);
    });
    // An error the actor runtime could not catch (e.g. its module failed to load).
    worker.on('error', (err: Error & { code?: string }) => {
      const code = typeof err.code === 'string' ? err.code : 'ROWAN_ERR_INTERNAL';
      this.failWith(fromRecord({ code, message: err.message }));
    });
    worker.on('exit', (code) => {
      if (!this.stopRequested)
        this.failWith(new RowanError(ErrorCodes.ACTOR_FAILED, `actor ${this.name} exited unexpectedly with code ${code}`));
      this.emit('exit', code);
    });
  }

  get failed(): RowanError | undefined {
    return this.failure;
  }

  private failWith(err: RowanError): void {
    if (this.failure) return;
    this.failure = err;
    // A failed actor is inert; ending its thread is the supervisor's job, done here at once.
    this.stopRequested = true;
    void this.worker.terminate();
    this.emit('failed', err);
  }

  /** Ask the actor to drain and stop; terminate it if it has not exited within `timeoutMs`. */
  async stop(timeoutMs: number): Promise<'stopped' | 'terminated'> {
    if (this.stopRequested) {
      await this.exited;
      return 'stopped';
    }
    this.stopRequested = true;
    this.port.postMessage({ type: 'stop' });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs)));
    const r = await Promise.race([this.exited.then(() => 'exited' as const), timedOut]);
    clearTimeout(timer);
    if (r === 'exited') return 'stopped';
    await this.worker.terminate();
    return 'terminated';
  }
}

/** Spawn one actor on a thread of its own, start it and wait for READY; rejects (and leaves no thread
 *  behind) if it fails first. */
export async function spawnActor(spec: SpawnSpec): Promise<ActorHandle> {
  return (await spawnThread([spec]))[0]!;
}

/**
 * Spawn one thread for `specs` (actors that share it: same cores), start each and wait until every one
 * is READY; rejects with the first failure and leaves no thread behind. `thread`: its name.
 */
export async function spawnThread(specs: readonly SpawnSpec[], thread = specs[0]!.start.name): Promise<ActorHandle[]> {
  const entries = [...new Set(specs.map((s) => s.entry.href))];
  const data: HostData = { entries, actors: specs.length };
  const worker = new Worker(HOST_ENTRY, { name: `rowan-${thread}`, workerData: data });
  const handles = specs.map((one) => {
    const spec: SpawnSpec = specs.length > 1 ? { ...one, start: { ...one.start, thread } } : one;
    const { port1, port2 } = new MessageChannel();
    const h = new ActorHandle(worker, spec, port1);
    const start: StartMessage = { type: 'start', ...spec.start };
    worker.postMessage({ type: 'host-start', entry: spec.entry.href, start, port: port2 } satisfies HostStart, [port2]);
    return h;
  });
  try {
    await Promise.all(handles.map((h) => awaitReady(h)));
    return handles;
  } catch (err) {
    await worker.terminate();
    throw err;
  }
}

function awaitReady(handle: ActorHandle): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return new Promise<void>((resolve, reject) => {
    timer = setTimeout(
      () => reject(new RowanError(ErrorCodes.ACTOR_START_TIMEOUT, `actor ${handle.name} not READY after ${handle.spec.readyTimeoutMs} ms`)),
      handle.spec.readyTimeoutMs,
    );
    handle.once('failed', reject);
    handle.on('lifecycle', (m: ActorToParent) => {
      if (m.type !== 'ready') return;
      handle.ready = { tid: m.tid, cpus: m.cpus, cpu: m.cpu, ...(m.endpoint ? { endpoint: m.endpoint } : {}) };
      resolve();
    });
  }).finally(() => clearTimeout(timer));
}
