// Authentication for `/api`: users.yaml password hashes (scrypt, the brief's `config_file`
// backend) traded for a JWT signed by the cluster (HS256 with the cluster secret, via `jose`).
// Every API request carries the token; an expired, forged or missing token is refused.

import { scrypt as scryptCb, scryptSync, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';

/** Tokens live this long unless the caller asks for less (admins may issue longer ones). */
export const TOKEN_TTL_S_DEFAULT = 12 * 3600;
export const TOKEN_TTL_S_MAX = 30 * 24 * 3600;
/** A cluster secret shorter than this is refused: HS256 needs at least 256 bits of key. */
export const CLUSTER_SECRET_BYTES_MIN = 32;

const SCRYPT_PREFIX = 'scrypt';
const SCRYPT_N_DEFAULT = 16384;
const SCRYPT_R = 8;
const SCRYPT_P = 1;
const SCRYPT_KEY_BYTES = 32;
const SCRYPT_MAXMEM_BYTES = 64 * 1024 * 1024;

export class AuthError extends Error {
  override readonly name = 'AuthError';
  constructor(
    readonly code:
      | 'missing-token'
      | 'bad-token'
      | 'expired-token'
      | 'revoked-token'
      | 'bad-credentials'
      | 'bad-hash'
      | 'weak-secret',
    message: string,
  ) {
    super(message);
  }
}

function scrypt(password: string, salt: Buffer, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCb(
      password,
      salt,
      SCRYPT_KEY_BYTES,
      { N: n, r: SCRYPT_R, p: SCRYPT_P, maxmem: SCRYPT_MAXMEM_BYTES },
      (err, key) => (err ? reject(err) : resolve(key)),
    );
  });
}

/** `scrypt$N$salt-b64$key-b64`: the format users.yaml stores. */
export async function hashPassword(password: string, n = SCRYPT_N_DEFAULT): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, n);
  return `${SCRYPT_PREFIX}$${n}$${salt.toString('base64')}$${key.toString('base64')}`;
}

interface ParsedHash {
  readonly n: number;
  readonly salt: Buffer;
  readonly key: Buffer;
}

function parseHash(stored: string): ParsedHash {
  const parts = stored.split('$');
  const n = Number(parts[1]);
  if (parts.length !== 4 || parts[0] !== SCRYPT_PREFIX || !Number.isInteger(n) || n < 2 || (n & (n - 1)) !== 0) {
    throw new AuthError('bad-hash', `password hash is not in the form scrypt$N$salt$key (N a power of two)`);
  }
  const salt = Buffer.from(parts[2] ?? '', 'base64');
  const key = Buffer.from(parts[3] ?? '', 'base64');
  if (key.length !== SCRYPT_KEY_BYTES)
    throw new AuthError('bad-hash', `password hash key must be ${SCRYPT_KEY_BYTES} bytes`);
  return { n, salt, key };
}

/** Checks a password on libuv's thread pool (tools; the controller verifies on its PasswordPool). */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const h = parseHash(stored);
  return timingSafeEqual(await scrypt(password, h.salt, h.n), h.key);
}

/** Checks a password on the calling thread: for a PasswordPool worker, whose thread does nothing else. */
export function verifyPasswordSync(password: string, stored: string): boolean {
  const h = parseHash(stored);
  const key = scryptSync(password, h.salt, SCRYPT_KEY_BYTES, {
    N: h.n,
    r: SCRYPT_R,
    p: SCRYPT_P,
    maxmem: SCRYPT_MAXMEM_BYTES,
  });
  return timingSafeEqual(key, h.key);
}

/**
 * What a login for a user that does not exist is verified against, so that it costs what a wrong
 * password costs (the answer's time must not tell which names exist). Its key is all zeros: no
 * password derives it, and the scrypt work is the same as for a real hash of the default cost.
 */
export const DUMMY_PASSWORD_HASH = `${SCRYPT_PREFIX}$${SCRYPT_N_DEFAULT}$eGNlLWR1bW15LXNhbHQ=$${Buffer.alloc(SCRYPT_KEY_BYTES).toString('base64')}`;

export interface TokenClaims {
  readonly user: string;
  /** Seconds since the epoch. */
  readonly expiresAt: number;
  /** The token's own id (`jti`): what `xceadmin token revoke` names; '' for a token issued without one. */
  readonly jti: string;
  /** A refresh token (claim `use: "refresh"`): it only renews access tokens (`auth.refresh`), never opens a request. */
  readonly refresh: boolean;
}

/** What a token is for: an access token opens requests; a refresh token only gets new access tokens. */
export type TokenUse = 'access' | 'refresh';

/** Verified tokens remembered (until they expire) so a busy client does not pay HMAC + JSON per request. */
export const TOKEN_CACHE_ENTRIES_MAX = 10_000;

export class TokenAuthority {
  private readonly key: Uint8Array;
  private readonly cache = new Map<string, TokenClaims>();

  constructor(
    secret: Uint8Array,
    private readonly issuer: string,
    private readonly nowMs: () => number = Date.now,
  ) {
    if (secret.byteLength < CLUSTER_SECRET_BYTES_MIN) {
      throw new AuthError(
        'weak-secret',
        `the cluster secret must be at least ${CLUSTER_SECRET_BYTES_MIN} bytes (it is ${secret.byteLength})`,
      );
    }
    this.key = secret;
  }

  async issue(user: string, ttl_s = TOKEN_TTL_S_DEFAULT, use: TokenUse = 'access'): Promise<string> {
    if (!(ttl_s > 0 && ttl_s <= TOKEN_TTL_S_MAX))
      throw new RangeError(`token lifetime must be 1..${TOKEN_TTL_S_MAX} s`);
    const now_s = Math.floor(this.nowMs() / 1000);
    return new SignJWT(use === 'refresh' ? { use } : {})
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(user)
      .setIssuer(this.issuer)
      .setIssuedAt(now_s)
      .setExpirationTime(now_s + ttl_s)
      .setJti(randomUUID())
      .sign(this.key);
  }

  async verify(token: string | undefined): Promise<TokenClaims> {
    if (token === undefined || token === '')
      throw new AuthError('missing-token', 'no token: log in with `xcecli login` first');
    const hit = this.cache.get(token);
    if (hit !== undefined) {
      if (hit.expiresAt * 1000 > this.nowMs()) return hit;
      this.cache.delete(token);
      throw new AuthError('expired-token', 'token expired: log in again with `xcecli login`');
    }
    const claims = await this.verifyUncached(token);
    if (this.cache.size >= TOKEN_CACHE_ENTRIES_MAX) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(token, claims);
    return claims;
  }

  private async verifyUncached(token: string): Promise<TokenClaims> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: ['HS256'],
        issuer: this.issuer,
        currentDate: new Date(this.nowMs()),
      });
      if (typeof payload.sub !== 'string' || payload.sub === '' || typeof payload.exp !== 'number') {
        throw new AuthError('bad-token', 'token has no subject or expiry');
      }
      return {
        user: payload.sub,
        expiresAt: payload.exp,
        jti: typeof payload.jti === 'string' ? payload.jti : '',
        refresh: payload['use'] === 'refresh',
      };
    } catch (err) {
      if (err instanceof AuthError) throw err;
      if (err instanceof joseErrors.JWTExpired)
        throw new AuthError('expired-token', 'token expired: log in again with `xcecli login`');
      throw new AuthError(
        'bad-token',
        'token is not valid for this cluster (forged, malformed or signed by another cluster)',
      );
    }
  }
}
