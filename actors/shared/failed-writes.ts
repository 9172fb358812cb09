// Writes that failed after their t-log append (issue 24). A PUT/DEL is persisted in the primary's t-log
// before it is sent to the backups; when it then fails (a backup did not take it in time, the lease ran
// out, the role moved) its entry stays in the t-log, unindexed, and its version is finished -- CommitVer
// passes it, and the backups raise their floors over it. A backup that never got it refuses it from then
// on as late. But a later cold start of the primary would index it from the t-log and serve it, and a
// failover to that backup would take it back (a read saw it, a later one does not). So each such entry
// is recorded here, durably, before its version is finished: the cold start skips it (../node/recovery.ts)
// and leaves it out of the restart tail (../node/restart-hold.ts). Its outcome was reported as unknown
// (docs/operations.md): a backup that holds it may still serve it after a failover -- it shows up late,
// which an unknown write may; it never shows up and then goes away.
// One line per write, "poolId shard version offset", appended (O_APPEND, one write call) and fsynced by
// the worker that failed it; every worker of the node appends to the same file. An entry is matched by
// its pool, offset, shard and version: a record of a pool since replaced (a rejoin starts a new one), or
// whose segment was freed and reused, matches nothing.
import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';

/** Where a worker records a failed write (the node's file, or the simulator's memory). */
export interface FailedWriteLog {
  /** Durable before it returns. */
  record(shard: number, version: number, offset: number): void;
}

/** What a cold start skips: offset -> "shard:version". */
export type FailedWrites = ReadonlyMap<number, string>;

export function failedKey(shard: number, version: number): string {
  return `${shard}:${version}`;
}

export class FailedWriteFile implements FailedWriteLog {
  private fd: number | null = null;

  constructor(
    private readonly path: string,
    private readonly poolId: string,
  ) {}

  record(shard: number, version: number, offset: number): void {
    this.fd ??= openSync(this.path, 'a');
    writeSync(this.fd, `${this.poolId} ${shard} ${version} ${offset}\n`);
    fsyncSync(this.fd);
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  /** The recorded writes of pool `poolId` (a torn last line, from a crash mid-append, is ignored). */
  static load(path: string, poolId: string): Map<number, string> {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw new RowanError(ErrorCodes.DATA_DIR, `cannot read ${path}: ${(err as Error).message}`);
    }
    const out = new Map<number, string>();
    for (const line of text.split('\n')) {
      const f = line.split(' ');
      if (f.length !== 4 || f[0] !== poolId) continue;
      const [s, v, o] = f.slice(1).map(Number);
      if (Number.isSafeInteger(s) && Number.isSafeInteger(v) && Number.isSafeInteger(o)) out.set(o!, failedKey(s!, v!));
    }
    return out;
  }
}

/** The simulator's: outlives a node's crashes like the file. */
export class MemoryFailedWrites implements FailedWriteLog {
  readonly writes = new Map<number, string>();

  record(shard: number, version: number, offset: number): void {
    this.writes.set(offset, failedKey(shard, version));
  }
}
