// The main-thread side of an actor (piscina's WorkerInfo): spawn the worker_thread, send the startup
// message, wait for READY, stop it, and turn every way it can die into one 'failed' event carrying a
// RowanError with a stable code.
import { EventEmitter } from 'node:events';
import { Worker } from 'node:worker_threads';
import { ErrorCodes, RowanError, fromRecord } from '../config/base/errors.js';
import type { ActorToParent, ReadyReport, StartMessage } from './lifecycle.js';

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
  ready: ReadyReport | undefined;
  /** Resolves with the thread's exit code once it is gone. */
  readonly exited: Promise<number>;
  private stopRequested = false;
  private failure: RowanError | undefined;

  constructor(
    readonly worker: Worker,
    readonly spec: SpawnSpec,
  ) {
    super();
    this.name = spec.start.name;
    this.role = spec.start.role;
    this.id = spec.start.id;
    this.cores = spec.start.cores;
    this.exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.on('message', (m: ActorToParent) => {
      if (m.type === 'failed') this.failWith(fromRecord(m.error));
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
    this.worker.postMessage({ type: 'stop' });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs)));
    const r = await Promise.race([this.exited.then(() => 'exited' as const), timedOut]);
    clearTimeout(timer);
    if (r === 'exited') return 'stopped';
    await this.worker.terminate();
    return 'terminated';
  }
}

/** Spawn, start and wait for READY; rejects (and leaves no thread behind) if the actor fails first. */
export async function spawnActor(spec: SpawnSpec): Promise<ActorHandle> {
  const worker = new Worker(spec.entry, { name: `rowan-${spec.start.name}` });
  const handle = new ActorHandle(worker, spec);
  let timer: NodeJS.Timeout | undefined;
  try {
    const ready = await new Promise<ReadyReport>((resolve, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new RowanError(ErrorCodes.ACTOR_START_TIMEOUT, `actor ${handle.name} not READY after ${spec.readyTimeoutMs} ms`),
          ),
        spec.readyTimeoutMs,
      );
      handle.once('failed', reject);
      worker.on('message', (m: ActorToParent) => {
        if (m.type === 'ready') resolve({ tid: m.tid, cpus: m.cpus, cpu: m.cpu, ...(m.endpoint ? { endpoint: m.endpoint } : {}) });
      });
      worker.postMessage({ type: 'start', ...spec.start } satisfies StartMessage);
    });
    handle.ready = ready;
    return handle;
  } catch (err) {
    await worker.terminate();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
