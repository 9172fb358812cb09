// Authentication of a connection to the configuration manager (docs/security.md): the same
// mutual challenge-response over the cluster secret as the NIC and the client port
// (config/base/secret.ts: proof, proofMatches), as JSON lines before any message of
// ./manager-protocol.ts. Only nodes hold the secret; clients (the client password) cannot reach it.
//
//   node -> CM   {t:'auth-hello', nonce}            the node's nonce (hex)
//   CM -> node   {t:'auth-challenge', nonce, proof} the CM's nonce and HMAC(secret, MANAGER_LABEL |
//                                                   node nonce | CM nonce); a CM without a secret
//                                                   (--no-auth) answers {t:'auth-ok', auth:false}
//   node -> CM   {t:'auth', proof}                  HMAC(secret, NODE_LABEL | CM nonce | node nonce)
//   CM -> node   {t:'auth-ok', auth:true}           from here on the lease protocol runs
//                {t:'auth-error', code, message}    and the CM closes the connection
//
// Until auth-ok the CM hands nothing to the manager: any other line is answered auth-error
// ROWAN_ERR_NOAUTH and the connection is closed, so an unauthenticated peer can neither hold nor break
// a lease, nor see a configuration. A node holding a secret refuses a CM that proves none.
//
// It lives in actors/shared/ because both sides use it: the manager's server (actors/manager/manager-server.ts) and
// every node's lease client (../node/lease-client.ts).
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { NONCE_BYTES, PROOF_BYTES, newNonce, proof, proofMatches } from '../../config/base/secret.js';

export const MANAGER_LABEL = 'rowan-manager-v1 manager';
export const NODE_LABEL = 'rowan-manager-v1 node';

export type AuthMessage =
  | { t: 'auth-hello'; nonce: string }
  | { t: 'auth-challenge'; nonce: string; proof: string }
  | { t: 'auth'; proof: string }
  | { t: 'auth-ok'; auth: boolean }
  | { t: 'auth-error'; code: string; message: string };

export function encodeAuth(m: AuthMessage): string {
  return JSON.stringify(m) + '\n';
}

const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

/** `v` as `bytes` bytes from its hex text, or null if it is not that. */
function unhex(v: unknown, bytes: number): Uint8Array | null {
  if (typeof v !== 'string' || v.length !== bytes * 2 || !/^[0-9a-f]*$/.test(v)) return null;
  return new Uint8Array(Buffer.from(v, 'hex'));
}

function field(m: unknown, k: string): unknown {
  return typeof m === 'object' && m !== null ? (m as Record<string, unknown>)[k] : undefined;
}

/**
 * The CM's side of one connection. `accept` takes each message until `authed`: it returns the lines
 * to answer with, or throws the RowanError (NOAUTH, AUTH_FAILED) to send as auth-error before closing.
 */
export class ManagerAuthGate {
  private nonce: Uint8Array | null = null;
  private peerNonce: Uint8Array | null = null;
  /** True from the start when the CM has no secret (every peer is trusted: --no-auth). */
  authed: boolean;

  constructor(private readonly secret: Uint8Array | null) {
    this.authed = secret === null;
  }

  accept(m: unknown): string[] {
    const t = field(m, 't');
    const secret = this.secret;
    if (t === 'auth-hello') {
      const peerNonce = unhex(field(m, 'nonce'), NONCE_BYTES);
      if (peerNonce === null) throw new RowanError(ErrorCodes.BAD_FRAME, 'auth-hello without a nonce of 32 bytes in hex');
      if (secret === null || this.authed) return [encodeAuth({ t: 'auth-ok', auth: secret !== null })];
      this.peerNonce = peerNonce;
      this.nonce = newNonce();
      return [encodeAuth({ t: 'auth-challenge', nonce: hex(this.nonce), proof: hex(proof(secret, MANAGER_LABEL, peerNonce, this.nonce)) })];
    }
    if (t === 'auth' && secret !== null && !this.authed) {
      const got = unhex(field(m, 'proof'), PROOF_BYTES);
      if (!this.nonce || !this.peerNonce) throw new RowanError(ErrorCodes.NOAUTH, 'auth before auth-hello: auth-hello carries the nonces auth proves');
      if (got === null || !proofMatches(proof(secret, NODE_LABEL, this.nonce, this.peerNonce), got))
        throw new RowanError(ErrorCodes.AUTH_FAILED, "the peer did not prove the cluster secret (another cluster's node, or an impostor)");
      this.authed = true;
      return [encodeAuth({ t: 'auth-ok', auth: true })];
    }
    throw new RowanError(ErrorCodes.NOAUTH, 'authentication required: the configuration manager takes auth-hello and auth (the cluster secret) first');
  }
}

/**
 * The node's side: `hello()` is the first line to send; `onMessage` takes the CM's answers and returns
 * the line to send next (the proof), null when authenticated, or throws NOAUTH / AUTH_FAILED / BAD_FRAME.
 */
export class NodeAuthHandshake {
  private readonly nonce = newNonce();
  private challenged = false;

  constructor(private readonly secret: Uint8Array | null, private readonly where: string) {}

  hello(): string {
    return encodeAuth({ t: 'auth-hello', nonce: hex(this.nonce) });
  }

  onMessage(m: unknown): string | null {
    const t = field(m, 't');
    if (t === 'auth-error') {
      const code = String(field(m, 'code'));
      throw new RowanError(code === ErrorCodes.NOAUTH ? ErrorCodes.NOAUTH : ErrorCodes.AUTH_FAILED, `the configuration manager at ${this.where} refused this node: ${String(field(m, 'message'))} (${code})`);
    }
    if (t === 'auth-ok') {
      if (this.secret !== null && (field(m, 'auth') !== true || !this.challenged))
        throw new RowanError(ErrorCodes.AUTH_FAILED, `the configuration manager at ${this.where} does not authenticate (started with --no-auth?), and this node holds a cluster secret: not following it`);
      return null;
    }
    if (t === 'auth-challenge' && !this.challenged) {
      if (this.secret === null)
        throw new RowanError(ErrorCodes.NOAUTH, `the configuration manager at ${this.where} requires the cluster secret, and this node has none (--no-auth)`);
      const nonce = unhex(field(m, 'nonce'), NONCE_BYTES);
      const p = unhex(field(m, 'proof'), PROOF_BYTES);
      if (nonce === null || p === null || !proofMatches(proof(this.secret, MANAGER_LABEL, this.nonce, nonce), p))
        throw new RowanError(ErrorCodes.AUTH_FAILED, `the configuration manager at ${this.where} did not prove the cluster secret (another cluster's manager, or an impostor)`);
      this.challenged = true;
      return encodeAuth({ t: 'auth', proof: hex(proof(this.secret, NODE_LABEL, nonce, this.nonce)) });
    }
    throw new RowanError(ErrorCodes.BAD_FRAME, `the configuration manager at ${this.where} answered the handshake with ${JSON.stringify(t)}`);
  }
}
