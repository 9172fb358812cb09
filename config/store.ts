// Configuration stores (DESIGN §6). The embedded file store keeps the cluster configuration in one JSON
// file, replaced atomically (write to a temporary name, fsync, rename, fsync the directory), so a crash
// leaves the old or the new configuration, never half of one. A ZooKeeper store comes with failover.
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { ErrorCodes, RowanError } from './base/errors.js';
import { validateCluster, type ClusterConfig } from './cluster.js';

export interface ConfigStore {
  read(): Promise<ClusterConfig>;
  /** Store `next` if the stored term is still `expectedTerm` (compare-and-set on the term). */
  write(next: ClusterConfig, expectedTerm: number | null): Promise<void>;
}

export class FileConfigStore implements ConfigStore {
  constructor(readonly path: string) {}

  async read(): Promise<ClusterConfig> {
    return this.readSync();
  }

  readSync(): ClusterConfig {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      throw new RowanError(ErrorCodes.BAD_CONFIG, `cannot read cluster config ${this.path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      throw new RowanError(ErrorCodes.BAD_CONFIG, `${this.path} is not JSON: ${(err as Error).message}`);
    }
    return validateCluster(raw);
  }

  async write(next: ClusterConfig, expectedTerm: number | null): Promise<void> {
    validateCluster(next);
    if (expectedTerm !== null) {
      const cur = this.readSync();
      if (cur.term !== expectedTerm) {
        throw new RowanError(ErrorCodes.STALE_TERM, `cluster config is at term ${cur.term}, not ${expectedTerm}`);
      }
    }
    const tmp = `${this.path}.${process.pid}.tmp`;
    // 0600: the configuration carries the cluster's checksum seed (docs/security.md), which only
    // the cluster's own processes should read.
    const fd = openSync(tmp, 'w', 0o600);
    try {
      writeSync(fd, JSON.stringify(next, null, 2) + '\n');
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.path);
    const dfd = openSync(dirname(this.path), 'r');
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  }
}
