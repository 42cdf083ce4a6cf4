// Fresh handshakes for `/raft` (peers) and `/worker` (workers): challenge-response. The dialler
// first asks the controller for a nonce (`GET /challenge`), then opens the WebSocket with
//   x-xce-nonce: <nonce>   x-xce-time: <its clock, ms>   x-xce-auth: HMAC-SHA256(key, purpose, subject, nonce, time)
// The controller accepts a nonce it issued, once, within CHALLENGE_TTL_MS, and a time within
// HANDSHAKE_SKEW_MS of its own clock; so a captured handshake is useless: replayed, its nonce is
// spent (refused and logged as a replay), and a nonce cannot be made up.

import { createHmac, randomFillSync, timingSafeEqual } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createSecureContext, type SecureContext, type SecureContextOptions } from 'node:tls';
import { ResumingAgent } from './tls-resumption.js';

export const CHALLENGE_PATH = '/challenge';
export const HEADER_NONCE = 'x-xce-nonce';
export const HEADER_TIME = 'x-xce-time';
export const HEADER_AUTH = 'x-xce-auth';
/** A nonce not used within this long is forgotten (a dial takes milliseconds). */
export const CHALLENGE_TTL_MS = 10_000;
/** Most nonces outstanding at once; past it the oldest is forgotten (its dialler simply redials). */
export const CHALLENGES_MAX = 8192;
/** Spent nonces remembered (to tell a replay from a made-up nonce in the log). */
export const SPENT_NONCES_MAX = 8192;
/** The dialler's clock may differ from the controller's by at most this much. */
export const HANDSHAKE_SKEW_MS = 30_000;
const NONCE_BYTES = 24;
/**
 * Nonces drawn from the CSPRNG in one call: a call costs far more than its bytes (tens of
 * microseconds on a loaded machine, each challenge of a failover's storm of worker dials paid one).
 */
export const NONCES_PER_DRAW = 128;
/** A challenge answer larger than this is not one. */
export const CHALLENGE_BYTES_MAX = 1024;

export type HandshakePurpose = 'raft-peer' | 'worker';

export class HandshakeError extends Error {
  override readonly name = 'HandshakeError';
  constructor(
    readonly code: 'missing' | 'replayed' | 'unknown-nonce' | 'stale-time' | 'bad-proof',
    message: string,
  ) {
    super(message);
  }
}

/** The proof a dialler sends: binds the key, what it is, who it claims to be, the nonce and its time. */
export function handshakeProof(
  key: Uint8Array,
  purpose: HandshakePurpose,
  subject: string,
  nonce: string,
  time_ms: number,
): string {
  return createHmac('sha256', key).update(`xce/${purpose}\n${subject}\n${nonce}\n${time_ms}`).digest('base64url');
}

/** The headers of a handshake (with the caller's own identity headers beside them). */
export function handshakeHeaders(
  key: Uint8Array,
  purpose: HandshakePurpose,
  subject: string,
  challenge: { readonly nonce: string },
  now_ms: number,
): Record<string, string> {
  return {
    [HEADER_NONCE]: challenge.nonce,
    [HEADER_TIME]: String(now_ms),
    [HEADER_AUTH]: handshakeProof(key, purpose, subject, challenge.nonce, now_ms),
  };
}

/** The controller's nonces: issued, spent once, forgotten after CHALLENGE_TTL_MS. */
export class ChallengeBook {
  /** Outstanding nonce → when it was issued; insertion order is issue order. */
  private readonly open = new Map<string, number>();
  private readonly spent = new Map<string, number>();
  /** Handshakes refused as replays (a spent nonce again). */
  replays = 0;
  /** Random bytes drawn for the next nonces, and how far they are used. */
  private readonly pool = Buffer.alloc(NONCE_BYTES * NONCES_PER_DRAW);
  private poolAt = this.pool.length;

  constructor(private readonly now: () => number = Date.now) {}

  issue(): { nonce: string; time_ms: number } {
    const now = this.now();
    this.prune(now);
    if (this.open.size >= CHALLENGES_MAX) this.open.delete(this.open.keys().next().value as string);
    const nonce = this.freshNonce();
    this.open.set(nonce, now);
    return { nonce, time_ms: now };
  }

  /**
   * Checks a handshake's headers against `key` and spends its nonce; throws HandshakeError saying
   * what is wrong. The nonce is spent even when the proof is wrong: one guess per nonce.
   */
  verify(
    headers: Record<string, string | string[] | undefined>,
    key: Uint8Array,
    purpose: HandshakePurpose,
    subject: string,
  ): void {
    const nonce = headers[HEADER_NONCE];
    const time = headers[HEADER_TIME];
    const auth = headers[HEADER_AUTH];
    if (typeof nonce !== 'string' || typeof time !== 'string' || typeof auth !== 'string') {
      throw new HandshakeError(
        'missing',
        `missing ${HEADER_NONCE}, ${HEADER_TIME} or ${HEADER_AUTH} header: ask ${CHALLENGE_PATH} for a nonce first`,
      );
    }
    const now = this.now();
    this.prune(now);
    if (this.spent.has(nonce)) {
      this.replays++;
      throw new HandshakeError('replayed', `replayed handshake: nonce already used`);
    }
    if (!this.open.delete(nonce))
      throw new HandshakeError('unknown-nonce', `handshake nonce was not issued by this controller or has expired`);
    if (this.spent.size >= SPENT_NONCES_MAX) this.spent.delete(this.spent.keys().next().value as string);
    this.spent.set(nonce, now);
    const time_ms = Number(time);
    if (!Number.isSafeInteger(time_ms) || Math.abs(time_ms - now) > HANDSHAKE_SKEW_MS) {
      throw new HandshakeError(
        'stale-time',
        `handshake time ${time} is more than ${HANDSHAKE_SKEW_MS / 1000} s from this controller's clock`,
      );
    }
    const want = Buffer.from(handshakeProof(key, purpose, subject, nonce, time_ms));
    const got = Buffer.from(auth);
    if (want.length !== got.length || !timingSafeEqual(want, got))
      throw new HandshakeError('bad-proof', `handshake proof does not match this cluster's key for ${subject}`);
  }

  /** NONCE_BYTES of CSPRNG output never handed out before, base64url; each used byte is zeroed. */
  private freshNonce(): string {
    if (this.poolAt >= this.pool.length) {
      randomFillSync(this.pool);
      this.poolAt = 0;
    }
    const end = this.poolAt + NONCE_BYTES;
    const nonce = this.pool.toString('base64url', this.poolAt, end);
    this.pool.fill(0, this.poolAt, end);
    this.poolAt = end;
    return nonce;
  }

  private prune(now: number): void {
    for (const [n, t] of this.open) {
      if (now - t <= CHALLENGE_TTL_MS) break;
      this.open.delete(n);
    }
    for (const [n, t] of this.spent) {
      if (now - t <= CHALLENGE_TTL_MS) break;
      this.spent.delete(n);
    }
  }
}

/** TLS options of a dial: the CA to verify the controller with (null: plain ws/http). */
export interface DialTls {
  readonly ca: SecureContextOptions['ca'];
}

const secureContexts = new WeakMap<DialTls, SecureContext>();

/**
 * The TLS options of a dial with `tls`: its CA parsed once into a SecureContext (made per dial from
 * `ca` it costs about a millisecond: a controller redialling its peers, a worker its leader).
 */
export function dialTlsOptions(tls: DialTls): { readonly ca: DialTls['ca']; readonly secureContext: SecureContext } {
  let secureContext = secureContexts.get(tls);
  if (secureContext === undefined) secureContexts.set(tls, (secureContext = createSecureContext({ ca: tls.ca })));
  // `ca` as well: an http agent pools its connections by it (not by the context).
  return { ca: tls.ca, secureContext };
}

/**
 * The options of a WebSocket dial over TLS with `tls`: dialTlsOptions, and frames sent unmasked (a
 * mask of zeros, which the protocol allows and ws skips). A client's mask (RFC 6455 §5.3) keeps a
 * script in a browser from steering what a plain-text proxy between it and the server caches; inside
 * TLS no proxy reads the frames, and masking every byte cost the leader about 1.5 % of its CPU in the
 * 256-client flood, on its links to the followers (benchmarks/README.md, latency part 8).
 */
export function wssDialOptions(tls: DialTls): ReturnType<typeof dialTlsOptions> & {
  readonly generateMask: (mask: Buffer) => void;
} {
  return { ...dialTlsOptions(tls), generateMask: zeroMask };
}

function zeroMask(mask: Buffer): void {
  mask.fill(0);
}

/**
 * A keep-alive agent for one dialler (a worker's leader link): the WebSocket dialled right after its
 * challenge reuses the challenge's connection, so the controller does one TLS handshake for both,
 * not two (a failover's storm of re-registrations is mostly TLS handshakes); over TLS the agent
 * offers the latest session any controller gave it, so that a dial of another controller resumes
 * it too (tls-resumption.ts: the controllers share their ticket keys).
 */
export function dialAgent(tls: DialTls | null): HttpAgent {
  const keep = { keepAlive: true, maxFreeSockets: 1 };
  return tls !== null ? new ResumingAgent(keep) : new HttpAgent(keep);
}

/**
 * `GET /challenge` on `address` (`host:port`); rejects after `timeout_ms`. With a keep-alive `agent`
 * the WebSocket dialled next with the same agent reuses the connection (one TLS handshake, not two).
 */
export async function fetchChallenge(
  address: string,
  tls: DialTls | null,
  timeout_ms: number,
  agent?: HttpAgent,
): Promise<{ nonce: string }> {
  return challengeNonce(address, await httpGet(address, CHALLENGE_PATH, tls, timeout_ms, CHALLENGE_BYTES_MAX, agent));
}

/** The nonce of a controller's answer to GET /challenge; throws naming `address` and what is wrong. */
export function challengeNonce(address: string, r: { status: number; body: string }): { nonce: string } {
  try {
    if (r.status !== 200) throw new Error(`status ${r.status}`);
    const body = JSON.parse(r.body) as { nonce?: unknown };
    if (typeof body.nonce !== 'string') throw new Error('no nonce in it');
    return { nonce: body.nonce };
  } catch (err) {
    throw new Error(`bad challenge answer from ${address}: ${(err as Error).message}`);
  }
}

/**
 * `GET path` on a controller's port (`host:port`): over https verified with `tls.ca`, or plain
 * http when `tls` is null; the body (at most `bytes_max`) as text. Rejects after `timeout_ms`.
 */
export function httpGet(
  address: string,
  path: string,
  tls: DialTls | null,
  timeout_ms: number,
  bytes_max = 16 * 1024 * 1024,
  agent?: HttpAgent,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const [host, port] = splitAddress(address);
    const opts = { host, port, path, method: 'GET', ...(agent !== undefined ? { agent } : {}) };
    const req = tls !== null ? httpsRequest({ ...opts, ...dialTlsOptions(tls) }) : httpRequest(opts);
    const timer = setTimeout(
      () => req.destroy(new Error(`no answer from ${address}${path} within ${timeout_ms} ms`)),
      timeout_ms,
    );
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        if (bytes > bytes_max)
          req.destroy(new Error(`answer from ${address}${path} is larger than ${bytes_max} bytes`));
        else chunks.push(c);
      });
      res.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end();
  });
}

function splitAddress(address: string): [string, number] {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i).replace(/^\[|\]$/g, ''), Number(address.slice(i + 1))];
}
