// `rowan put|get|del`: one request through RowanClient (client/), for people and scripts.
// Exit codes as for every rowan command: 0 ok; 1 the request failed (the code is printed: PEER_GONE,
// TIMEOUT, STALE_TERM after the retries, ...) or, for get, the key has no value; 2 bad usage.
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { RowanClient, checkPutOptions, type ClientOptions, type PutOptions } from '../client/client.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { CLIENT_PASSWORD_FILE_ENV } from '../config/base/secret.js';

const EXIT_OK = 0;
const EXIT_FAILED = 1;

interface KvOpts {
  cluster?: string;
  zookeeper?: string;
  clusterName?: string;
  endpoint?: string;
  timeout: string;
  raw?: boolean;
  json?: boolean;
  valueFile?: string;
  ttlMs?: string;
  expiresAtMs?: string;
  passwordFile?: string;
  tlsCa?: string;
  /** Refused with a pointer to --password-file: clients no longer hold the cluster secret. */
  secretFile?: string;
}

/** Values above this are refused before reading stdin or a file to the end (the store's limit is lower). */
const VALUE_INPUT_BYTES_MAX = 64 * 1024 * 1024;

/** The value of `put`: the argument, or with `-` standard input, or --value-file's bytes, exactly. */
function valueOf(arg: string | undefined, o: KvOpts): Uint8Array | string {
  if (o.valueFile !== undefined) {
    if (arg !== undefined) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'give the value as an argument or with --value-file, not both');
    return readInput(o.valueFile, o.valueFile);
  }
  if (arg === undefined) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'put needs a value: an argument, - for standard input, or --value-file <file>');
  return arg === '-' ? readInput(0, 'standard input') : arg;
}

/** put's expiry (client PutOptions): --ttl-ms or --expires-at-ms, digits only, one of them, in
 *  1..2^47 (the client's check); else BAD_ARGUMENT (exit 2, nothing sent). */
function expiryOpts(o: KvOpts): PutOptions {
  const ms = (flag: string, v: string): number => {
    if (!/^[0-9]+$/.test(v)) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `${flag}: '${v}' is not a whole number of ms`);
    return Number(v);
  };
  const opts: PutOptions = {
    ...(o.ttlMs !== undefined ? { ttlMs: ms('--ttl-ms', o.ttlMs) } : {}),
    ...(o.expiresAtMs !== undefined ? { expiresAtMs: ms('--expires-at-ms', o.expiresAtMs) } : {}),
  };
  checkPutOptions(opts); // before connecting
  return opts;
}

function readInput(from: string | number, what: string): Uint8Array {
  let b: Buffer;
  try {
    b = readFileSync(from);
  } catch (err) {
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, `cannot read the value from ${what}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  if (b.length > VALUE_INPUT_BYTES_MAX) throw new RowanError(ErrorCodes.VALUE_TOO_LARGE, `the value from ${what} is ${b.length} bytes`);
  return b;
}

const target = `Exactly one of --cluster, --zookeeper or --endpoint says where the cluster is. The request goes to the worker
serving the key's shard on the shard's primary; if the cluster's term moved on, the client fetches the
new configuration and retries.

Exit codes: 0 done; 1 the request failed (the error code is printed) or, for get, the key has no value;
2 bad usage (missing or conflicting options, unreadable cluster file).`;

function clientOptions(o: KvOpts): ClientOptions {
  if ([o.cluster, o.zookeeper, o.endpoint].filter((x) => x !== undefined).length !== 1)
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'give exactly one of --cluster <file>, --zookeeper <host:port> or --endpoint <host:port>');
  if (o.clusterName !== undefined && o.zookeeper === undefined) throw new RowanError(ErrorCodes.BAD_ARGUMENT, '--cluster-name goes with --zookeeper');
  const timeoutMs = Number(o.timeout);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--timeout: '${o.timeout}' is not a positive integer`);
  const where: ClientOptions =
    o.cluster !== undefined ? { cluster: o.cluster }
    : o.zookeeper !== undefined ? { zookeeper: o.zookeeper, ...(o.clusterName !== undefined ? { clusterName: o.clusterName } : {}) }
    : { endpoints: o.endpoint!.split(',') };
  if (o.secretFile !== undefined)
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'clients prove the client password, not the cluster secret: give --password-file FILE (rowan cluster writes DIR/client-password)');
  // The password: --password-file, else ROWAN_CLIENT_PASSWORD_FILE, else (with --cluster) DIR/client-password beside it.
  const passwordFile = o.passwordFile ?? process.env[CLIENT_PASSWORD_FILE_ENV];
  // TLS: --tls-ca, else ROWAN_TLS_CA (the same variable a node reads its CA from).
  const tlsCaFile = o.tlsCa ?? process.env['ROWAN_TLS_CA'];
  return { ...where, timeoutMs, maxInFlight: 1, ...(passwordFile ? { passwordFile } : {}), ...(tlsCaFile ? { tlsCaFile } : {}) };
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
    .option('--zookeeper <host:port,...>', 'the configuration is in ZooKeeper at these servers (znode /rowan/<cluster-name>/config)')
    .option('--cluster-name <name>', 'with --zookeeper: the cluster (default: default)')
    .option('--endpoint <host:port>', "any worker's client port, asked for the configuration (comma-separate several)")
    .addOption(new Option('--timeout <ms>', 'per attempt: connecting, or waiting for a response').default('5000'))
    .option('--password-file <file>', `the client password (default: $${CLIENT_PASSWORD_FILE_ENV}, else the file client-password beside --cluster's file)`)
    .addOption(new Option('--secret-file <file>').hideHelp())
    .option('--tls-ca <file>', 'the cluster CA (PEM) when the nodes serve TLS: connect over TLS and verify them against it (default: $ROWAN_TLS_CA)')
    .addHelpText('after', '\n' + target);
}

/** Register put, get and del on the `rowan` program; `setCode` receives each command's exit code. */
export function registerKvCommands(p: Command, setCode: (code: number) => void): void {
  addTarget(
    p
      .command('put')
      .description('store <value> under <key> (UTF-8); done means persisted on every replica. <value> - reads the bytes from standard input')
      .argument('<key>')
      .argument('[value]', 'the value (UTF-8), or - for standard input; or use --value-file')
      .option('--value-file <file>', "the value is this file's bytes, exactly")
      .option('--ttl-ms <ms>', "the key expires this many ms after its shard's primary wrote it (Redis's SET PX); reads then find no value")
      .option('--expires-at-ms <unix-ms>', "the key expires at this Unix time in ms (Redis's SET PXAT); not with --ttl-ms"),
  ).action(async function (this: Command, key: string, value: string | undefined) {
    const o = this.opts<KvOpts>();
    const expiry = expiryOpts(o);
    const v = valueOf(value, o);
    setCode(await withClient(o, async (c) => (await c.put(key, v, expiry), EXIT_OK)));
  });
  addTarget(
    p
      .command('get')
      .description("print <key>'s value and a newline on stdout; no value: a message on stderr, exit 1")
      .argument('<key>')
      .option('--raw', 'print the value bytes exactly, without the newline')
      .option('--json', 'print {"key", "value" (UTF-8, or null), "base64"} as one JSON line (exit 0 also without a value)'),
  ).action(async function (this: Command, key: string) {
    const o = this.opts<KvOpts>();
    setCode(
      await withClient(o, async (c) => {
        const v = await c.get(key);
        if (o.json) {
          process.stdout.write(JSON.stringify({ key, value: v === null ? null : Buffer.from(v).toString('utf8'), base64: v === null ? null : Buffer.from(v).toString('base64') }) + '\n');
          return EXIT_OK;
        }
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
