// A cluster member (it holds the secret and the configuration) forges replication blocks over the tcp
// fabric into a node's b-log: one for a key of a shard that node is the primary of, at a higher version
// than the acknowledged write, and one with version 2^48-1 for a shard it backs up (issue 12, "no input
// can brick a node"). The node's digest does not apply them, and after a full restart its cold start
// does not either: it starts cleanly, serves the acknowledged values, and takes new writes of both
// shards. It also cannot READ that b-log back through the NIC.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { RowanClient } from '../../client/client.js';
import { readSecretFile } from '../../config/base/secret.js';
import { shardOfKey } from '../../config/slots.js';
import { defaultLimits } from '../../config/limits.js';
import { FileConfigStore } from '../../config/store.js';
import { TcpConnection } from '../../runtime/fabric/tcp.js';
import { setChecksumSeed } from '../../shm/log-checksum.js';
import { EntryType, encodeBlocks } from '../../shm/log.js';
import { VERSION_MAX } from '../../shm/log-layout.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));

test('forged blocks sent over the tcp fabric are not applied, live or at cold start; the node serves the acknowledged values', { timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-trust-tcp-'));
  const base = randomBasePort();
  let run = launchCluster(dir, base, ['--fabric', 'tcp', '--shards', '8']);
  try {
    await run.ready;
    const file = join(dir, 'cluster.json');
    const cluster = new FileConfigStore(file).readSync();
    const victim = cluster.nodes[0]!;
    const shardOf = (k: string) => shardOfKey(enc(k), cluster.shardCount);
    const pick = (pred: (s: number) => boolean, tag: string) => {
      for (let i = 0; ; i++) if (pred(shardOf(`${tag}${i}`))) return `${tag}${i}`;
    };
    const owned = pick((s) => cluster.shards[s]!.primary === victim.id, 'own'); // node 0 is its primary
    const backed = pick((s) => cluster.shards[s]!.backups.includes(victim.id), 'rep'); // node 0 backs it up
    const client = await RowanClient.connect({ cluster: file });
    await client.put(owned, 'acknowledged');
    await client.put(backed, 'replicated');

    // The forger: an authenticated fabric peer that names itself node 1 and keys its blocks with the seed.
    setChecksumSeed(cluster.checksumSeed ?? 0);
    const conn = await TcpConnection.connect({ host: victim.fabric.host, port: victim.fabric.port, secret: readSecretFile(join(dir, 'secret')), senderId: 1 });
    const forged = [
      ...encodeBlocks({ type: EntryType.Put, shard: shardOf(owned), version: 2 ** 40, key: enc(owned), value: enc('forged') }, defaultLimits),
      ...encodeBlocks({ type: EntryType.Put, shard: shardOf(backed), version: VERSION_MAX, key: enc(backed), value: enc('forged-max') }, defaultLimits),
    ];
    let at = 0;
    for (const b of forged) at = await conn.write(b);
    await assert.rejects(conn.read(at, 64), { code: 'ROWAN_ERR_NOT_GRANTED' }, 'nor can it read the b-log back');
    await conn.close();
    // Live: node 0 still serves its own value and takes new writes of the backed-up shard (its backup
    // index was not raised to 2^48-1 by digest).
    assert.equal(dec(await client.get(owned)), 'acknowledged');
    await client.put(pick((s) => s === shardOf(backed), 'more'), 'after-forgery');
    await client.close();
    assert.equal(await stopCluster(run.child), 0, run.output());

    // Cold start from the pools: the node comes up and serves the acknowledged values.
    run = launchCluster(dir, base);
    await run.ready;
    const again = await RowanClient.connect({ cluster: file });
    assert.equal(dec(await again.get(owned)), 'acknowledged');
    assert.equal(dec(await again.getReplica(victim.id, owned)), 'acknowledged');
    assert.equal(dec(await again.getReplica(victim.id, backed)), 'replicated', 'node 0\'s backup index holds the replicated value');
    // Both shards take writes (a forged 2^48-1 would make every PUT/DEL of the shard fail on node 0).
    await again.put(owned, 'v2');
    await again.put(backed, 'v2');
    assert.deepEqual([dec(await again.get(owned)), dec(await again.get(backed))], ['v2', 'v2']);
    await again.close();
    const log = readFileSync(join(dir, 'node-0.log'), 'utf8');
    assert.match(log, /cold start: [1-9]\d* b-log block\(s\) not applied/, 'node 0\'s cold start reported the untrusted blocks');
  } finally {
    setChecksumSeed(0);
    if (run.child.exitCode === null) await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
