// Keys per purpose. The controllers alone hold the cluster's root secret (xce.yaml `secret_file`);
// from it each derives, with HKDF-SHA256, one key per purpose, so that no key opens more than
// its own door:
//   user-token key   signs and checks users' JWTs (`/api`)              controllers only
//   peer key         authenticates Raft peers (`/raft`)                controllers only
//   worker root      derives each host's credential                    controllers only
//   host credential  HKDF(worker root, host, epoch): one host's key    that host's xcecd only
//   TLS ticket root  HKDF(it, period): the TLS session ticket keys      controllers only
//                    of one period (tls-resumption.ts)
// A worker holds its own host credential and nothing else: root on a compute node can speak for
// that node only (it cannot mint a token, join the Raft group or register as another host). The
// epoch is the host's enrolment count in the replicated state: `xceadmin host revoke` refuses the
// host, and the next `xceadmin host enroll` moves it to a new epoch, so that the old credential
// stays useless.

import { createHmac, hkdfSync } from 'node:crypto';

/** A root secret shorter than this is refused: the derived HMAC keys need 256 bits of input. */
export const ROOT_SECRET_BYTES_MIN = 32;
export const DERIVED_KEY_BYTES = 32;
/** Credential files larger than this are refused unread. */
export const CREDENTIAL_FILE_BYTES_MAX = 4096;
const SALT = 'xce-keys/v1';
const CREDENTIAL_MAGIC = 'xce-host-credential/v1';

export class KeyError extends Error {
  override readonly name = 'KeyError';
}

export interface ClusterKeys {
  readonly userToken: Uint8Array;
  readonly peer: Uint8Array;
  readonly workerRoot: Uint8Array;
  readonly tlsTicketRoot: Uint8Array;
}

function derive(input: Uint8Array, info: string): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', input, SALT, info, DERIVED_KEY_BYTES));
}

/** The controllers' keys, one per purpose, from the root secret. */
export function deriveClusterKeys(root: Uint8Array): ClusterKeys {
  if (root.byteLength < ROOT_SECRET_BYTES_MIN) {
    throw new KeyError(`the cluster secret must be at least ${ROOT_SECRET_BYTES_MIN} bytes (it is ${root.byteLength})`);
  }
  return {
    userToken: derive(root, 'user-token'),
    peer: derive(root, 'raft-peer'),
    workerRoot: derive(root, 'worker-root'),
    tlsTicketRoot: derive(root, 'tls-ticket-root'),
  };
}

/** Node's `ticketKeys`: 16 bytes of key name, 16 of HMAC secret, 16 of AES key. */
export const TLS_TICKET_KEYS_BYTES = 48;

/**
 * The TLS session ticket keys of one period (tls-resumption.ts): the same on every controller, so
 * that a session one controller gave a worker resumes on another; a new period, new keys.
 */
export function tlsTicketKeys(ticketRoot: Uint8Array, period: number): Buffer {
  if (!(Number.isSafeInteger(period) && period >= 0)) throw new KeyError(`bad TLS ticket period ${period}`);
  return Buffer.from(hkdfSync('sha256', ticketRoot, SALT, `tls-ticket/${period}`, TLS_TICKET_KEYS_BYTES));
}

/** One host's credential at one enrolment epoch (from the controllers' worker root). */
export function hostCredentialKey(workerRoot: Uint8Array, host: string, epoch: number): Uint8Array {
  if (!(Number.isSafeInteger(epoch) && epoch >= 0)) throw new KeyError(`bad enrolment epoch ${epoch}`);
  return derive(workerRoot, `host/${host}/${epoch}`);
}

/** Host credential keys kept per worker root (hostCredentialKeyCached); past it the oldest is dropped. */
export const HOST_KEYS_CACHED_MAX = 16_384;
const hostKeys = new WeakMap<Uint8Array, Map<string, Uint8Array>>();
/** HKDF's extract step of each worker root (the same for every host). */
const workerPrks = new WeakMap<Uint8Array, Buffer>();

/**
 * hostCredentialKey by RFC 5869 with the extract step kept per worker root: one HMAC per host
 * (hkdfSync costs about 0.2 ms a call, most of it the call itself; keys.test.ts checks both agree).
 */
function hostCredentialKeyFast(workerRoot: Uint8Array, host: string, epoch: number): Uint8Array {
  if (!(Number.isSafeInteger(epoch) && epoch >= 0)) throw new KeyError(`bad enrolment epoch ${epoch}`);
  let prk = workerPrks.get(workerRoot);
  if (prk === undefined) workerPrks.set(workerRoot, (prk = createHmac('sha256', SALT).update(workerRoot).digest()));
  // DERIVED_KEY_BYTES is one SHA-256 block: T(1) = HMAC(PRK, info | 0x01).
  return new Uint8Array(createHmac('sha256', prk).update(`host/${host}/${epoch}`).update(Buffer.of(1)).digest());
}

/**
 * hostCredentialKey, derived once per host and epoch: the leader checks a handshake per worker
 * connection, and HKDF (about 0.2 ms) for each of 2,000 hosts re-registering after a failover adds
 * up. A new epoch (enrol again, revoke) is a new entry; the cache is bounded (host names come from
 * the unauthenticated upgrade).
 */
export function hostCredentialKeyCached(workerRoot: Uint8Array, host: string, epoch: number): Uint8Array {
  let cache = hostKeys.get(workerRoot);
  if (cache === undefined) hostKeys.set(workerRoot, (cache = new Map()));
  const id = `${epoch}/${host}`;
  const known = cache.get(id);
  if (known !== undefined) return known;
  const key = hostCredentialKeyFast(workerRoot, host, epoch);
  if (cache.size >= HOST_KEYS_CACHED_MAX) cache.delete(cache.keys().next().value as string);
  cache.set(id, key);
  return key;
}

/** What a worker's credential file holds. */
export interface HostCredential {
  readonly host: string;
  readonly epoch: number;
  readonly key: Uint8Array;
}

/** The text of a credential file: one line, `xce-host-credential/v1 <host> <epoch> <key base64url>`. */
export function formatHostCredential(c: HostCredential): string {
  return `${CREDENTIAL_MAGIC} ${c.host} ${c.epoch} ${Buffer.from(c.key).toString('base64url')}\n`;
}

/** Reads a credential file's text; `path` names it in errors. */
export function parseHostCredential(text: string, path: string): HostCredential {
  if (text.length > CREDENTIAL_FILE_BYTES_MAX)
    throw new KeyError(`${path}: larger than ${CREDENTIAL_FILE_BYTES_MAX} bytes; not a host credential`);
  const parts = text.trim().split(/\s+/);
  if (parts.length !== 4 || parts[0] !== CREDENTIAL_MAGIC) {
    throw new KeyError(
      `${path}: not a host credential (expected one line "${CREDENTIAL_MAGIC} <host> <epoch> <key>", written by xceadmin host enroll)`,
    );
  }
  const epoch = Number(parts[2]);
  if (!(Number.isSafeInteger(epoch) && epoch >= 0))
    throw new KeyError(`${path}: epoch ${parts[2]} is not a whole number`);
  const key = Buffer.from(parts[3] as string, 'base64url');
  if (key.length !== DERIVED_KEY_BYTES)
    throw new KeyError(`${path}: the key is ${key.length} bytes; a host credential key is ${DERIVED_KEY_BYTES}`);
  return { host: parts[1] as string, epoch, key: new Uint8Array(key) };
}
