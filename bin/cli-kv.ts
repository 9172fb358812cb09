// `rowan put|get|del`: one request through RowanClient (actors/kv/client), for people and scripts.
// Exit codes as for every rowan command: 0 ok; 1 the request failed (the code is printed: PEER_GONE,
// TIMEOUT, STALE_TERM after the retries, ...) or, for get, the key has no value; 2 bad usage.
import { Command, Option } from 'commander';
import { RowanClient, type ClientOptions } from '../actors/kv/client/client.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';

const EXIT_OK = 0;
const EXIT_FAILED = 1;

interface KvOpts {
  cluster?: string;
  endpoint?: string;
  timeout: string;
  raw?: boolean;
}

const target = `Exactly one of --cluster or --endpoint says where the cluster is. The request goes to the worker
serving the key's shard on the shard's primary; if the cluster's term moved on, the client fetches the
new configuration and retries.

Exit codes: 0 done; 1 the request failed (the error code is printed) or, for get, the key has no value;
2 bad usage (missing or conflicting options, unreadable cluster file).`;

function clientOptions(o: KvOpts): ClientOptions {
  if ((o.cluster === undefined) === (o.endpoint === undefined))
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'give exactly one of --cluster <file> or --endpoint <host:port>');
  const timeoutMs = Number(o.timeout);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--timeout: '${o.timeout}' is not a positive integer`);
  const where: ClientOptions = o.cluster !== undefined ? { cluster: o.cluster } : { endpoints: o.endpoint!.split(',') };
  return { ...where, timeoutMs, maxInFlight: 1 };
}

async function withClient(o: KvOpts, f: (c: RowanClient) => Promise<number>): Promise<number> {
  const c = await RowanClient.connect(clientOptions(o));
  try {
    return await f(c);
  } finally {
    await c.close();
  }
}

function addTarget(cmd: Command): Command {
  return cmd
    .option('--cluster <file>', 'the cluster configuration JSON (the embedded config store file)')
    .option('--endpoint <host:port>', "any worker's client port, asked for the configuration (comma-separate several)")
    .addOption(new Option('--timeout <ms>', 'per attempt: connecting, or waiting for a response').default('5000'))
    .addHelpText('after', '\n' + target);
}

/** Register put, get and del on the `rowan` program; `setCode` receives each command's exit code. */
export function registerKvCommands(p: Command, setCode: (code: number) => void): void {
  addTarget(
    p
      .command('put')
      .description('store <value> (UTF-8) under <key> (UTF-8); done means persisted on every replica')
      .argument('<key>')
      .argument('<value>'),
  ).action(async function (this: Command, key: string, value: string) {
    setCode(await withClient(this.opts<KvOpts>(), async (c) => (await c.put(key, value), EXIT_OK)));
  });
  addTarget(
    p
      .command('get')
      .description("print <key>'s value and a newline on stdout; no value: a message on stderr, exit 1")
      .argument('<key>')
      .option('--raw', 'print the value bytes exactly, without the newline'),
  ).action(async function (this: Command, key: string) {
    const o = this.opts<KvOpts>();
    setCode(
      await withClient(o, async (c) => {
        const v = await c.get(key);
        if (v === null) {
          process.stderr.write(`rowan: key '${key}' has no value (${ErrorCodes.NOT_FOUND})\n`);
          return EXIT_FAILED;
        }
        process.stdout.write(v);
        if (!o.raw) process.stdout.write('\n');
        return EXIT_OK;
      }),
    );
  });
  addTarget(
    p
      .command('del')
      .description('delete <key> (deleting a key without a value is not an error)')
      .argument('<key>'),
  ).action(async function (this: Command, key: string) {
    setCode(await withClient(this.opts<KvOpts>(), async (c) => (await c.del(key), EXIT_OK)));
  });
}
