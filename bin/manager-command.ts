// The `rowan manager` command's flags; what it does is ./manager-cli.ts (runManager), imported when it
// runs, so that `rowan --help` and the other commands do not load the manager's module graph.
import { Option, type Command } from 'commander';
import { SECRET_FILE_ENV } from '../config/base/secret.js';
import { logLevels } from '../config/base/log.js';
import { defaultTimings } from '../config/timings.js';
import { DEBUG_PAUSE_STEPS } from '../actors/manager/protocol.js';
import { addZooKeeperFlags } from './store-flags.js';
import type { ManagerOpts } from './manager-cli.js';

export function registerManagerCommand(p: Command, run: (f: () => Promise<number>) => () => Promise<void>): void {
  const cmd = p.command('manager')
    .description('run the configuration manager (§4.5): leases for every node of the cluster, failover of a node whose lease expired, resharding of hot shards (§4.6); with --zookeeper it stores failovers in ZooKeeper, and several managers of one cluster elect one active manager (the others are standbys that take over when it dies); while its ZooKeeper session is lost it stores nothing (failovers wait until the session is back)')
    .option('--cluster <file>', 'the cluster configuration (the embedded store; rowan cluster writes DIR/cluster.json); or --zookeeper');
  addZooKeeperFlags(cmd)
    .option('--host <addr>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port nodes renew their leases on (0 = any free port)', '7090')
    .option('--lease-ms <ms>', 'lease length granted to nodes', String(defaultTimings.leaseMs))
    .option('--renew-ms <ms>', 'how often nodes renew (default lease / 5: a live node fences itself after lease - drift - renew ms without a renewal getting through)')
    .option('--zk-session-ms <ms>', 'with --zookeeper: the ZooKeeper session timeout S. Managers elect one active manager; a standby takes over about S after the active one dies, and the active one rides out a ZooKeeper outage of up to 3/4 S (docs/running.md "ZooKeeper")', String(defaultTimings.managerZkSessionMs))
    .addOption(new Option('--log-level <level>', 'log level of the JSON lines on stderr (default: info)').choices(logLevels))
    .option('--data-dir <dir>', "the manager process's runtime directory (default: manager/ next to the cluster file; required with --zookeeper)")
    .option('--no-auto-reshard', 'move hot shards only when asked (rowan reshard), not on its own (§4.6; config resharding.auto)')
    .option('--reshard-period-ms <ms>', 'how often nodes report load and the manager plans moves (config resharding.periodMs, default 500)')
    .option('--secret-file <file>', `the cluster secret nodes must prove before their leases, configurations and gather/scatter (default: $${SECRET_FILE_ENV}, else the file secret beside --cluster's file; none: an error)`)
    .option('--tls-cert <file>', 'PEM certificate of the manager: mutual TLS with the nodes (with --tls-key, --tls-ca; default: $ROWAN_TLS_CERT)')
    .option('--tls-key <file>', 'PEM private key of --tls-cert, mode 0600 (default: $ROWAN_TLS_KEY)')
    .option('--tls-ca <file>', 'PEM CA the nodes\' certificates must be signed by (default: $ROWAN_TLS_CA)')
    .option('--no-auth', 'let any peer that reaches the port hold or break leases (a warning is logged)')
    .option('--debug-pause <step:ms>', `for fault tests, never in production: hold the manager MS ms after STEP (${DEBUG_PAUSE_STEPS.join(', ')}) of every such round, so a test can kill it or the cluster there`)
    .action(function (this: Command) {
      return run(async () => (await import('./manager-cli.js')).runManager(this.opts<ManagerOpts>()))();
    });
}
