// The `rowan` command (bin/rowan is a shim into main()). Exit codes: 0 ok; 1 the node failed or is not
// running; 2 bad usage (unknown role, bad CPU list, bad config, unusable data dir, unknown option).
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { defaultLimits } from '../config/limits.js';
import { CLIENT_PASSWORD_FILE_ENV, SECRET_FILE_ENV } from '../config/base/secret.js';
import { persistenceModes, roles, threadPolicies } from '../config/model.js';
import { FABRIC_KINDS } from '../config/base/fabric-kinds.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { logLevels } from '../config/base/log.js';
import { addZooKeeperFlags } from './store-flags.js';
import type { CliExtras, StartOpts } from './node-cli.js';

export type { CliExtras };

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

// A persistence mode the machine cannot give (dax without a DAX fs) is a wrong choice of flag, so usage too.
const usageCodes: string[] = [
  ErrorCodes.BAD_ARGUMENT,
  ErrorCodes.BAD_CONFIG,
  ErrorCodes.UNKNOWN_ROLE,
  ErrorCodes.DATA_DIR,
  ErrorCodes.PMEM2_MODE_UNAVAILABLE,
];

/** The version in this package's package.json (dist/bin/cli.js -> ../../package.json). */
function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

function program(extras: CliExtras, setCode: (c: number) => void): Command {
  const p = new Command('rowan')
    .version(packageVersion(), '-V, --version', 'print the version of rowan')
    .description('ROWAN-KV node: a replicated persistent-memory key-value store as pinned worker-thread actors')
    .exitOverride()
    .showHelpAfterError('(run rowan --help for usage)');
  const run = (f: () => Promise<number>) => async () => setCode(await f());
  p.command('start')
    .description('start a node in the foreground; SIGTERM or SIGINT (or rowan stop) drains and stops it')
    .requiredOption('--data-dir <dir>', 'node directory for pool.pm and rowan.sock (created if its parent exists)')
    .option('--roles <list>', `actors to run as role[:count][@cpus],... ; roles: ${roles.join(', ')} (default: one of each)`)
    .option('--cores <cpus>', 'CPUs the actors are spread over, e.g. 0-1 or 0,1 (default: every CPU this process may use)')
    .addOption(new Option('--threads <policy>', 'actors per thread: dedicated = one thread per actor (the paper); shared = the background actors (control, digest, clean, migration, nic) share one thread, each worker keeps its own; auto = shared when the node has fewer cores than actors (default: auto; config runtime.threads)').choices(threadPolicies))
    .option('--config <file>', 'JSON config file merged over the defaults (paper parameters)')
    .addOption(new Option('--persistence <mode>', 'how pool writes are made durable (default: pagecache)').choices(persistenceModes))
    .addOption(new Option('--log-level <level>', 'log level of the JSON lines on stderr (default: info)').choices(logLevels))
    .addOption(new Option('--fabric <kind>', 'how Rowan writes reach this node; tcp starts the nic actor (default: shm)').choices(FABRIC_KINDS))
    .option('--fabric-port <port>', 'TCP port of the nic (default: 7400; 0 = any free port, shown by rowan status)')
    .option('--remote-segments-max <n>', 'segments one peer node\'s one-sided regions may hold in this pool; one more ALLOC gets ROWAN_ERR_QUOTA (default: a quarter of the pool; config fabric.remoteSegmentsMax)')
    // Developer flag, hidden from --help (docs/running.md, "The verbs fabric"): --fabric verbs opens the
    // loopback RNIC over unix sockets in DIR instead of libibverbs' devices; every node of the emulated
    // fabric names the same DIR. For tests on machines without RDMA hardware, never for production.
    .addOption(new Option('--verbs-loopback <dir>', 'developer: --fabric verbs over the loopback RNIC in DIR, not libibverbs').hideHelp())
    .option('--cluster <file>', 'serve ROWAN-KV as a node of the cluster in this JSON file (written by rowan cluster)')
    .option('--zookeeper <host:port,...>', 'instead of --cluster: read the cluster configuration from ZooKeeper at cold start (znode /rowan/<cluster-name>/config)')
    .option('--cluster-name <name>', 'with --zookeeper: the cluster whose configuration to read (default: default)')
    .option('--node-id <n>', "this node's id in the cluster (--cluster or --zookeeper)")
    .option('--rejoin', 'with --manager: this node was failed over; ask the manager to take it back as a member holding no shard. Its pool is kept if it opens (removed if not) and serves nothing until each shard re-replication gives it is reconciled with its primary (rowan cluster does this when it restarts a dead node)')
    .option('--manager <host:port,...>', 'hold a lease with this configuration manager and follow its configurations (failover); several: the active one and its standbys (with --zookeeper), tried in turn; without it the configuration is static')
    .option('--metrics-port <port>', 'serve Prometheus metrics on GET http://127.0.0.1:<port>/metrics (0: any free port, logged; default: none)')
    .option('--secret-file <file>', `the cluster secret (64 hex characters, mode 0600) other nodes and the manager must prove (default: $${SECRET_FILE_ENV}, else the file secret beside --cluster's file; none: an error)`)
    .option('--client-password-file <file>', `the client password (16-256 printable characters, mode 0600) clients must prove on the client and Redis ports (default: $${CLIENT_PASSWORD_FILE_ENV}, else the file client-password beside --cluster's file; none: an error)`)
    .option('--tls-cert <file>', 'PEM certificate of this node: TLS on its client, Redis, fabric and manager connections (with --tls-key and --tls-ca; default: $ROWAN_TLS_CERT; none: TLS off)')
    .option('--tls-key <file>', "PEM private key of --tls-cert, mode 0600 (default: $ROWAN_TLS_KEY)")
    .option('--tls-ca <file>', 'PEM CA that signed the cluster\'s certificates: peers must present one it signed (mutual TLS), clients verify this node with it (default: $ROWAN_TLS_CA)')
    .option('--no-auth', 'serve without authentication: anyone who reaches the fabric, client or Redis ports may read and write (a warning is logged)')
    .option('--index-keys <n>', `keys each shard's index is sized for at start; it grows on demand (default: ${defaultLimits.indexKeysPerShard})`)
    .option('--index-keys-max <n>', `most keys one shard's index may grow to; past it a PUT of a new key gets ROWAN_ERR_INDEX_FULL, not applied (default: ${defaultLimits.indexKeysPerShardMax})`)
    .action(function (this: Command) {
      return run(async () => (await import('./node-cli.js')).start(this.opts<StartOpts>(), extras))();
    });
  const statusCmd = p.command('status')
    .description("print a running node's actors (role, tid, cores read back in the thread, counters), its segments by owner and state with their live share, garbage collection and commit progress, and ring depths; or with --cluster every node's state, segments by state, live share, GC and the shard distribution")
    .option('--data-dir <dir>', 'the node directory given to rowan start')
    .option('--cluster <file>', 'the cluster configuration (rowan cluster writes DIR/cluster.json): report every node, and the launcher running DIR')
    .option('--dir <dir>', 'a rowan cluster directory (--dir of rowan cluster): its launcher (pid, detached or not, log) and every node')
    .option('--json', 'print the status as JSON');
  addZooKeeperFlags(statusCmd).action(function (this: Command) {
    return run(async () => (await import('./node-cli.js')).status(this.opts()))();
  });
  p.command('stop')
    .description('ask a running node to drain and stop, and wait until it has')
    .requiredOption('--data-dir <dir>', 'the node directory given to rowan start')
    .option('--timeout <ms>', 'how long to wait for the node to stop', '10000')
    .action(function (this: Command) {
      return run(async () => (await import('./node-cli.js')).stop(this.opts()))();
    });
  return p;
}

type Run = (f: () => Promise<number>) => () => Promise<void>;

/**
 * The other commands, each defined in a module of its own, in the order --help lists them, with the
 * names they add. Each is imported only when it may be the one that runs (see commandsFor): a node,
 * the launcher or the manager does not pay for loading the rest (a node's, the manager's and the
 * ZooKeeper client's module graphs).
 */
const commandModules: { names: string[]; register: (p: Command, run: Run, setCode: (c: number) => void) => Promise<void> }[] = [
  { names: ['put', 'get', 'del'], register: async (p, _run, setCode) => (await import('./cli-kv.js')).registerKvCommands(p, setCode) },
  { names: ['cluster', 'node'], register: async (p, run) => (await import('./cluster-cli.js')).registerClusterCommand(p, run) },
  { names: ['cluster', 'node'], register: async (p, run) => (await import('./membership-cli.js')).registerMembershipCommands(p, run) },
  { names: ['manager'], register: async (p, run) => (await import('./manager-command.js')).registerManagerCommand(p, run) },
  { names: ['reshard'], register: async (p, run) => (await import('./reshard-cli.js')).registerReshardCommand(p, run) },
  { names: ['config'], register: async (p, run) => (await import('./config-cli.js')).registerConfigCommand(p, run) },
];

/**
 * The command names whose modules `argv` needs: its first word when it names a command, else (no
 * command, an option such as --help or --version first, a typo, `help`) every one, so that the help
 * and the errors commander prints are those of the whole program.
 */
function commandsFor(argv: string[]): ((name: string) => boolean) {
  const first = argv[2];
  const known = ['start', 'status', 'stop', ...commandModules.flatMap((m) => m.names)];
  if (first === undefined || !known.includes(first)) return () => true;
  return (name) => name === first;
}

async function fullProgram(argv: string[], extras: CliExtras, setCode: (c: number) => void): Promise<Command> {
  const p = program(extras, setCode);
  const run: Run = (f) => async () => setCode(await f());
  const wanted = commandsFor(argv);
  for (const m of commandModules) if (m.names.some(wanted)) await m.register(p, run, setCode);
  return p;
}

/** Run the CLI with `argv` (process.argv form) and set process.exitCode. */
export async function main(argv: string[], extras: CliExtras = {}): Promise<void> {
  // `rowan ... | head`: a reader that went away is not an error of ours.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? EXIT_OK);
    throw err;
  });
  let code = EXIT_OK;
  try {
    await (await fullProgram(argv, extras, (c) => (code = c))).parseAsync(argv);
  } catch (err) {
    code = exitCodeOf(err);
  }
  process.exitCode = code;
}

function exitCodeOf(err: unknown): number {
  if (err instanceof CommanderError) {
    // Commander already printed its message (unknown option, missing --data-dir, bad choice).
    return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
  }
  if (err instanceof RowanError) {
    process.stderr.write(`rowan: ${err.message} (${err.code})\n`);
    return usageCodes.includes(err.code) ? EXIT_USAGE : EXIT_FAILED;
  }
  process.stderr.write(`rowan: ${(err as Error)?.stack ?? String(err)}\n`);
  return EXIT_FAILED;
}
