// A durable map shard -> version in a data-dir file, tied to one pool (a file of another pool reads as
// empty): the tombstone floors a backup drops under (./floors.ts) and the version high-water marks a
// node hands versions out below (./version-marks.ts). Written with a rename (./trust.ts writeDurably),
// so a crash keeps the old map or the new one, whole. The simulator keeps the same maps in memory.
import { readFileSync } from 'node:fs';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { writeDurably, writeDurablyAsync } from './trust.js';

/** Where a shard -> version map lives: a file in the data dir, or the simulator's memory. */
export interface ShardVersionStore {
  load(): Map<number, number>;
  /** Durable before it returns (a crash keeps the old map or the new one, all of it). */
  save(versions: ReadonlyMap<number, number>): void;
}

const FORMAT = 1;

/** The map of one pool (`poolId`) in `path`, under the JSON field `field` (e.g. `floors`). */
export class FileShardVersionStore implements ShardVersionStore {
  constructor(
    private readonly path: string,
    private readonly poolId: string,
    private readonly field: string,
  ) {}

  load(): Map<number, number> {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw new RowanError(ErrorCodes.DATA_DIR, `cannot read ${this.path}: ${(err as Error).message}`);
    }
    let f: Record<string, unknown>;
    try {
      f = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new RowanError(ErrorCodes.DATA_DIR, `${this.path} is not valid JSON (it is written with a rename: remove it only with its pool)`);
    }
    const map = f[this.field];
    if (f['format'] !== FORMAT || f['poolId'] !== this.poolId || typeof map !== 'object' || map === null) return new Map();
    const out = new Map<number, number>();
    for (const [s, v] of Object.entries(map as Record<string, unknown>)) {
      if (Number.isSafeInteger(Number(s)) && Number.isSafeInteger(v) && (v as number) > 0) out.set(Number(s), v as number);
    }
    return out;
  }

  save(versions: ReadonlyMap<number, number>): void {
    writeDurably(this.path, this.text(versions));
  }

  /** save() through the thread pool (the event loop runs on meanwhile); durable once it resolves. */
  saveAsync(versions: ReadonlyMap<number, number>): Promise<void> {
    return writeDurablyAsync(this.path, this.text(versions));
  }

  private text(versions: ReadonlyMap<number, number>): string {
    return JSON.stringify({ format: FORMAT, poolId: this.poolId, [this.field]: Object.fromEntries([...versions].sort((a, b) => a[0] - b[0])) }) + '\n';
  }
}

/** A store in memory that outlives a simulated node's crashes (a write is atomic, like a rename). */
export class MemoryShardVersionStore implements ShardVersionStore {
  private saved = new Map<number, number>();
  /** How many times save() ran (tests: what reached "disk"). */
  saves = 0;

  load(): Map<number, number> {
    return new Map(this.saved);
  }

  save(versions: ReadonlyMap<number, number>): void {
    this.saved = new Map(versions);
    this.saves++;
  }
}
