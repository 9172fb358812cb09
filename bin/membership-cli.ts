// Membership on a live cluster (issue 28): `rowan cluster add-node` (a local cluster made by `rowan
// cluster`: the next node id, its ports by the --base-port scheme, its data under DIR; the manager adds
// it, the launcher starts its process, then the manager spreads replicas onto it) and `rowan node
// decommission N` (the manager moves every replica off N, removes it, and its process stops). The
// manager does the work (actors/manager/membership.ts); these ask it and follow the stored
// configuration until the change is done.
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { findSecret } from '../config/base/secret.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import type { ClusterConfig, ClusterNode } from '../config/cluster.js';
import { readStoreOnce, type StoreSpec } from '../config/store-spec.js';
import { nextNodeId, spread, stayingMembers } from '../actors/manager/membership.js';
import { addZooKeeperFlags, storeSpecOf, type StoreFlags } from './store-flags.js';
import { askManager, managerFor } from './manager-admin.js';
import { readClusterAndManagers } from './cluster-status.js';
import { storeFor } from './cluster-store.js';
import { basePortOf, metricsPortOf, runningLauncher } from './cluster-lifecycle.js';

interface AskOpts {
  manager?: string;
  secretFile?: string;
  timeout: string;
  wait?: boolean;
}

/** Node `id`'s entry by `rowan cluster`'s port scheme (see its --base-port), shaped like the others. */
export function newNodeEntry(c: ClusterConfig, dir: string): ClusterNode {
  const id = nextNodeId(c);
  const base = basePortOf(c);
  const like = c.nodes[0]!;
  const workers = like.workerPorts.length;
  const ports = (at: number) => Array.from({ length: workers }, (_, w) => base + at + id * 10 + w);
  if (base + 600 + id * 10 + workers > 65535) throw new RowanError(ErrorCodes.MEMBERSHIP_REFUSED, `node ${id}'s ports would pass 65535 (base port ${base})`);
  return {
    id, host: like.host, dataDir: join(dir, `node-${id}`), workerPorts: ports(0),
    fabric: { kind: like.fabric.kind, host: like.fabric.host, port: like.fabric.port === 0 ? 0 : base + 500 + id },
    ...(like.resp ? { resp: { ports: ports(200), clusterPorts: ports(600) } } : {}),
  };
}

async function portFree(host: string, port: number, what: string): Promise<void> {
  await new Promise<void>((ok, reject) => {
    const s = createServer();
    s.once('error', (err: NodeJS.ErrnoException) => reject(new RowanError(ErrorCodes.MEMBERSHIP_REFUSED, `${what} ${host}:${port} is not free (${err.code ?? err.message})`)));
    s.listen({ host, port, exclusive: true }, () => s.close(() => ok()));
  });
}

async function nodePortsFree(c: ClusterConfig, n: ClusterNode): Promise<void> {
  for (const p of n.workerPorts) await portFree(n.host, p, `node ${n.id}'s client port`);
  for (const p of [...(n.resp?.ports ?? []), ...(n.resp?.clusterPorts ?? [])]) await portFree(n.host, p, `node ${n.id}'s RESP port`);
  if (n.fabric.kind !== 'shm' && n.fabric.port !== 0) await portFree(n.fabric.host, n.fabric.port, `node ${n.id}'s fabric port`);
  await portFree('127.0.0.1', metricsPortOf(c, n.id), `node ${n.id}'s metrics port`);
}

/** Ask the cluster's manager (the active one with ZooKeeper); the reply's result. The secret: --secret-file,
 *  else the one beside the cluster file, else (a `rowan cluster` directory, ZooKeeper too) DIR/secret. */
async function ask(spec: StoreSpec, o: AskOpts & { dir?: string }, body: Parameters<typeof askManager>[1]): Promise<unknown> {
  const { cluster, managers } = await readClusterAndManagers(spec);
  const to = managerFor(o.manager, cluster, managers);
  if (to === null) throw new RowanError(ErrorCodes.NODE_NOT_RUNNING, 'no configuration manager is active in the ZooKeeper election (a standby may be taking over); try again, or give --manager host:port');
  const beside = 'file' in spec ? spec.file : o.dir !== undefined ? join(resolve(o.dir), 'cluster.json') : undefined;
  return askManager(to, body, Number(o.timeout), findSecret(o.secretFile, beside));
}

/** One line on where the membership change is. */
export function progressLine(c: ClusterConfig): string {
  const members = stayingMembers(c);
  const { replicas, primaries } = spread(c, members);
  const each = members.map((n) => `${n}:${replicas.get(n)}r/${primaries.get(n)}p`).join(' ');
  const copies = (c.copies ?? []).map((t) => `shard ${t.shard} ${t.source}->${t.target}`).join(', ');
  return `term ${c.term}: ${each}${(c.leaving ?? []).length ? `; leaving ${c.leaving!.join(',')}` : ''}${copies ? `; copying ${copies}` : ''}`;
}

/** Read the store until `done` holds, printing each new term; TIMEOUT after `ms`. */
async function follow(spec: StoreSpec, done: (c: ClusterConfig) => boolean, ms: number): Promise<ClusterConfig> {
  const t0 = Date.now();
  let term = -1;
  for (;;) {
    const c = await readStoreOnce(spec);
    if (c.term !== term) console.log(progressLine(c));
    term = c.term;
    if (done(c)) return c;
    if (Date.now() - t0 > ms) throw new RowanError(ErrorCodes.TIMEOUT, `not done within ${ms} ms (the manager goes on; rowan status shows where it is)`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function addNode(o: AskOpts & { dir: string; zookeeper?: string; clusterName?: string }): Promise<number> {
  const dir = resolve(o.dir);
  const { spec } = storeFor(dir, o);
  if (runningLauncher(dir) === null) throw new RowanError(ErrorCodes.NODE_NOT_RUNNING, `no rowan cluster runs in ${dir}: its launcher starts the new node's process (start it with rowan cluster --dir ${o.dir}); on another host, see docs/operations.md "Adding a node"`);
  const cluster = await readStoreOnce(spec);
  const node = newNodeEntry(cluster, dir);
  await nodePortsFree(cluster, node);
  const r = (await ask(spec, o, { op: 'addNode', node })) as { term: number };
  console.log(`node ${node.id} added to the membership (term ${r.term}): clients on ${node.workerPorts.map((p) => `${node.host}:${p}`).join(', ')}, data in ${node.dataDir}; the launcher starts it and the manager copies replicas onto it`);
  if (o.wait === false) return 0;
  const c = await follow(spec, (x) => x.term > r.term && !x.balancing, Number(o.timeout));
  console.log(`spread: ${progressLine(c)}`);
  return 0;
}

interface NodeAddOpts extends AskOpts, StoreFlags {
  host: string;
  dataDir: string;
  clientPorts: string;
  fabric: string;
  fabricPort: string;
  respPorts?: string;
  respClusterPorts?: string;
}

const portList = (name: string, v: string): number[] => v.split(',').map((x) => {
  const n = Number(x);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--${name}: '${x}' is not a port`);
  return n;
});

/** `rowan node add`: a node on any host, its entry given by hand; its own `rowan start` runs there. */
async function nodeAdd(o: NodeAddOpts): Promise<number> {
  const spec = storeSpecOf(o);
  if (!spec) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'node add needs --cluster FILE or --zookeeper HOST:PORT');
  const cluster = await readStoreOnce(spec);
  const workerPorts = portList('client-ports', o.clientPorts);
  const node: ClusterNode = {
    id: nextNodeId(cluster), host: o.host, dataDir: o.dataDir, workerPorts,
    fabric: { kind: o.fabric as ClusterNode['fabric']['kind'], host: o.host, port: o.fabricPort === '0' ? 0 : portList('fabric-port', o.fabricPort)[0]! },
    ...(o.respPorts !== undefined ? { resp: { ports: portList('resp-ports', o.respPorts), clusterPorts: portList('resp-cluster-ports', o.respClusterPorts ?? '') } } : {}),
  };
  const r = (await ask(spec, o, { op: 'addNode', node })) as { term: number };
  console.log(`node ${node.id} added to the membership (term ${r.term}), holding no shard. Start it on ${o.host}:\n` +
    `  rowan start --data-dir ${o.dataDir} ${'file' in spec ? '--cluster cluster.json (a copy of the manager\'s, taken now)' : `--zookeeper ${spec.zookeeper}`} --node-id ${node.id} --fabric ${o.fabric} --fabric-port ${node.fabric.port} --manager MANAGER:PORT --secret-file secret\n` +
    'the manager then copies replicas onto it (rowan status shows the spread)');
  return 0;
}

async function decommission(id: string, o: AskOpts & StoreFlags & { dir?: string }): Promise<number> {
  const node = Number(id);
  if (!Number.isInteger(node) || node < 0) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `'${id}' is not a node id`);
  const spec = o.dir !== undefined ? storeFor(resolve(o.dir), o).spec : storeSpecOf(o);
  if (!spec) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'decommission needs --dir DIR (a rowan cluster directory), --cluster FILE or --zookeeper HOST:PORT');
  const r = (await ask(spec, o, { op: 'decommission', node })) as { term: number };
  console.log(`node ${node} is being decommissioned (term ${r.term}): the manager moves every replica off it, then removes it from the membership`);
  if (o.wait === false) return 0;
  // Removed, then the members left balanced as after an add (the removal's term turns balancing on).
  const c = await follow(spec, (x) => !x.nodes.some((n) => n.id === node) && !x.balancing, Number(o.timeout));
  console.log(`node ${node} decommissioned (term ${c.term}); its process stops; spread: ${progressLine(c)}`);
  return 0;
}

function askFlags(cmd: Command): Command {
  return cmd
    .option('--manager <host:port>', 'the configuration manager (default: with ZooKeeper the active one, else 127.0.0.1 and the port rowan cluster gives it)')
    .option('--secret-file <file>', "the cluster secret the manager asks for (default: $ROWAN_SECRET_FILE, else the secret beside the cluster's file)")
    .option('--no-wait', 'return once the change is stored, without following the copies')
    .option('--timeout <ms>', 'how long to wait for the manager and, without --no-wait, for the change to finish', '600000');
}

export function registerMembershipCommands(p: Command, run: (f: () => Promise<number>) => () => Promise<void>): void {
  const cluster = p.commands.find((c) => c.name() === 'cluster');
  if (!cluster) throw new RowanError(ErrorCodes.INTERNAL, 'the cluster command is registered first');
  askFlags(cluster.command('add-node')
    .description("add a node to the running local cluster in --dir: the next node id, ports by --base-port's scheme; the manager adds it to the membership, the launcher starts it, then the manager copies replicas (and hands primary roles) onto it until they are fairly spread"))
    .action(function (this: Command) {
      return run(() => addNode(this.optsWithGlobals<AskOpts & { dir: string; zookeeper?: string; clusterName?: string }>()))();
    });
  const nodeCmd = p.command('node').description('membership of a running cluster (see also rowan cluster add-node)');
  const add = nodeCmd.command('add')
    .description("add a node on any host to a running cluster: the manager lists it (the next node id, holding no shard); start it there with rowan start --node-id N --manager ... --secret-file ..., and the manager copies replicas onto it")
    .requiredOption('--host <addr>', 'the address clients and peers reach the node at')
    .requiredOption('--data-dir <dir>', 'its data directory on that host')
    .requiredOption('--client-ports <p,...>', 'one client port per worker')
    .option('--fabric <kind>', 'how replication writes reach it: tcp or verbs between hosts (shm: same host only)', 'tcp')
    .option('--fabric-port <port>', "its NIC's port (tcp) or verbs side channel; 0 with shm", '0')
    .option('--resp-ports <p,...>', 'RESP single-endpoint ports, one per worker (with --resp-cluster-ports)')
    .option('--resp-cluster-ports <p,...>', 'RESP Redis Cluster ports, one per worker')
    .option('--cluster <file>', 'the cluster configuration file; or --zookeeper');
  askFlags(addZooKeeperFlags(add)).action(function (this: Command) {
    return run(() => nodeAdd(this.opts<NodeAddOpts>()))();
  });
  const dec = nodeCmd.command('decommission <node>')
    .description('move every replica off a node (its primary roles to full backups, its backups copied to the nodes holding fewest), then remove it from the membership: its process stops. Refused (ROWAN_ERR_TOO_FEW_NODES) when fewer nodes than the replication factor would be left')
    .option('--dir <dir>', 'a rowan cluster directory (its cluster.json or ZooKeeper pointer)')
    .option('--cluster <file>', 'the cluster configuration file; or --zookeeper');
  askFlags(addZooKeeperFlags(dec)).action(function (this: Command, id: string) {
    return run(() => decommission(id, this.opts()))();
  });
}
