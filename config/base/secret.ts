// The cluster secret (docs/security.md): 32 random bytes, stored as 64 hex characters in one
// line of a file of mode 0600 (`rowan cluster` writes DIR/secret). Every authenticated link proves it
// by challenge-response, never by sending it: each side sends a fresh nonce, each answers with
// HMAC-SHA256(secret, label | the peer's nonce | its own nonce). The label names the protocol and the
// side, so a proof can be neither replayed (the nonces are new per connection) nor reflected back (the
// two sides' labels differ).
//
// Clients hold a different credential, the client password (`rowan cluster` writes DIR/client-password,
// also 0600): the binary client port proves it by the same challenge-response (keyed with the password's
// bytes, under the client labels), the Redis ports take it as `requirepass`. A client therefore never
// holds the cluster secret and cannot pose as a node to the fabric, REPLICATE or the manager.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, openSync, closeSync, existsSync, readFileSync, statSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ErrorCodes, RowanError } from './errors.js';

export const SECRET_BYTES = 32;
export const NONCE_BYTES = 32;
export const PROOF_BYTES = 32;
/** The name of the secret file in a cluster directory (next to cluster.json). */
export const SECRET_FILE = 'secret';
/** The environment variable naming a secret file (rowan start, and the client commands). */
export const SECRET_FILE_ENV = 'ROWAN_SECRET_FILE';

/** A secret from its hex text (the file's content, or a password given to a client). */
export function parseSecret(text: string, from: string): Uint8Array {
  const hex = text.trim();
  if (!/^[0-9a-fA-F]{64}$/.test(hex))
    throw new RowanError(ErrorCodes.BAD_CONFIG, `${from} does not hold a cluster secret (64 hex characters, as rowan cluster writes)`);
  return new Uint8Array(Buffer.from(hex, 'hex'));
}

/** The secret in `path`. Refused when group or others may read it: a secret anyone can read is none. */
export function readSecretFile(path: string): Uint8Array {
  return parseSecret(readPrivateFile(path, 'secret'), `the secret file ${path}`);
}

/** The text of a credential file that only its owner may read (`what` names it in errors). */
function readPrivateFile(path: string, what: string): string {
  let mode: number;
  let text: string;
  try {
    mode = statSync(path).mode;
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new RowanError(ErrorCodes.BAD_CONFIG, `cannot read the ${what} file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if ((mode & 0o077) !== 0)
    throw new RowanError(ErrorCodes.BAD_CONFIG, `the ${what} file ${path} has mode 0${(mode & 0o777).toString(8)}: group and others must not read it (chmod 600 ${path})`);
  return text;
}

/** Create `path` (mode 0600, failing if it exists) holding a new random secret; returns it. */
/** The cluster secret a manager or an operator's tool uses: the file `flag` names, else
 *  $ROWAN_SECRET_FILE, else the file `secret` beside `clusterFile`; null when none of them exists. */
export function findSecret(flag: string | undefined, clusterFile: string | undefined): Uint8Array | null {
  const file = flag ?? process.env[SECRET_FILE_ENV];
  if (file !== undefined && file !== '') return readSecretFile(resolve(file));
  if (clusterFile !== undefined) {
    const beside = join(dirname(resolve(clusterFile)), SECRET_FILE);
    if (existsSync(beside)) return readSecretFile(beside);
  }
  return null;
}

export function writeNewSecretFile(path: string, what = 'secret'): Uint8Array {
  const secret = new Uint8Array(randomBytes(SECRET_BYTES));
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (err) {
    throw new RowanError(ErrorCodes.DATA_DIR, `cannot create the ${what} file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    writeSync(fd, `${secretHex(secret)}\n`);
  } finally {
    closeSync(fd);
  }
  chmodSync(path, 0o600); // openSync's mode passes through the umask, which can only clear bits; be explicit
  return secret;
}

export function secretHex(secret: Uint8Array): string {
  return Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength).toString('hex');
}

export function newNonce(): Uint8Array {
  return new Uint8Array(randomBytes(NONCE_BYTES));
}

/** HMAC-SHA256(secret, label | theirs | mine): what one side sends to prove the secret. */
export function proof(secret: Uint8Array, label: string, theirs: Uint8Array, mine: Uint8Array): Uint8Array {
  return new Uint8Array(createHmac('sha256', secret).update(label).update(theirs).update(mine).digest());
}

/** Constant-time check of a proof the peer sent. */
export function proofMatches(expected: Uint8Array, got: Uint8Array): boolean {
  return expected.length === got.length && timingSafeEqual(expected, got);
}

/** Constant-time comparison of a password a client sent with the client password (the Redis ports'
 *  AUTH). Exact bytes: a length mismatch is decided without looking at them. */
export function passwordMatches(password: Uint8Array, got: Uint8Array): boolean {
  const want = Buffer.from(password.buffer, password.byteOffset, password.byteLength);
  const g = Buffer.from(got.buffer, got.byteOffset, got.byteLength);
  return g.length === want.length && timingSafeEqual(want, g);
}

// ---- the client password ---------------------------------------------------------------------------

/** The name of the client password file in a cluster directory (next to cluster.json and secret). */
export const CLIENT_PASSWORD_FILE = 'client-password';
/** The environment variable naming a client password file (rowan start, and the client commands). */
export const CLIENT_PASSWORD_FILE_ENV = 'ROWAN_CLIENT_PASSWORD_FILE';
/** Bounds of a client password: long enough to resist guessing, short enough for one AUTH line. */
export const PASSWORD_BYTES_MIN = 16;
export const PASSWORD_BYTES_MAX = 256;

/** A client password from its text (a file's first line, or given to a client): 16..256 printable
 *  ASCII characters without spaces, so it passes unchanged through `redis-cli -a` and `AUTH`. */
export function parsePassword(text: string, from: string): Uint8Array {
  const pw = text.replace(/[\r\n]+$/, '');
  if (!/^[\x21-\x7e]*$/.test(pw) || pw.length < PASSWORD_BYTES_MIN || pw.length > PASSWORD_BYTES_MAX)
    throw new RowanError(ErrorCodes.BAD_CONFIG, `${from} does not hold a client password (${PASSWORD_BYTES_MIN}-${PASSWORD_BYTES_MAX} printable ASCII characters, no spaces, on one line)`);
  return new Uint8Array(Buffer.from(pw, 'latin1'));
}

/** The client password in `path`; refused, like the secret, when group or others may read it. */
export function readPasswordFile(path: string): Uint8Array {
  return parsePassword(readPrivateFile(path, 'client password'), `the client password file ${path}`);
}

/** Create `path` (mode 0600, failing if it exists) holding a new random client password (64 hex). */
export function writeNewPasswordFile(path: string): Uint8Array {
  return new Uint8Array(Buffer.from(secretHex(writeNewSecretFile(path, 'client password')), 'latin1'));
}

/** The password's text (what redis-cli -a and ioredis take). */
export function passwordText(password: Uint8Array): string {
  return Buffer.from(password.buffer, password.byteOffset, password.byteLength).toString('latin1');
}
