// What a `login` goes through before a token is issued: a rate limit per user name and per client
// address (token buckets, checked before any password work), then one password verification on
// the PasswordPool, the same for a name that does not exist (against DUMMY_PASSWORD_HASH) as for
// a wrong password, and one answer for both: the time and the message tell nobody which names exist.

import { AuthError, DUMMY_PASSWORD_HASH } from './auth.js';
import { PasswordPoolBusyError, type PasswordVerifier } from './password-pool.js';

/** A bucket holds up to `burst` attempts and regains one every `refill_ms`. */
export interface BucketLimits {
  readonly burst: number;
  readonly refill_ms: number;
}

/** Per user name: 10 attempts at once, then one every 6 s (10 a minute). */
export const LOGIN_USER_LIMITS: BucketLimits = { burst: 10, refill_ms: 6_000 };
/** Per client address (several users behind one login node): 30 at once, then one every 2 s. */
export const LOGIN_ADDRESS_LIMITS: BucketLimits = { burst: 30, refill_ms: 2_000 };
/** Buckets remembered per kind; the least recently used goes first (a full bucket loses nothing). */
export const LOGIN_BUCKETS_MAX = 10_000;

export class LoginRateLimitedError extends Error {
  override readonly name = 'LoginRateLimitedError';
  constructor(
    message: string,
    readonly retryAfter_ms: number,
  ) {
    super(message);
  }
}

interface Bucket {
  tokens: number;
  at_ms: number;
}

/** Token buckets by key, bounded in number. */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  /** The key remembered last: the map's last (its most recently used). */
  private lastKey: string | null = null;

  constructor(
    readonly limits: BucketLimits,
    readonly entriesMax = LOGIN_BUCKETS_MAX,
  ) {
    if (!(limits.burst >= 1 && limits.refill_ms > 0))
      throw new RangeError(`a bucket needs burst ≥ 1 and refill_ms > 0`);
  }

  /** The bucket of `key` refilled to `now_ms` (a new full one for a key not seen), not yet remembered. */
  private current(key: string, now_ms: number): Bucket {
    const b = this.buckets.get(key);
    if (b === undefined) return { tokens: this.limits.burst, at_ms: now_ms };
    const gained = Math.max(0, now_ms - b.at_ms) / this.limits.refill_ms;
    b.tokens = Math.min(this.limits.burst, b.tokens + gained);
    b.at_ms = now_ms;
    return b;
  }

  /** 0 when an attempt may go ahead (it is counted), else the ms until one may. Does not count a refused one. */
  wait(key: string, now_ms: number): number {
    const b = this.current(key, now_ms);
    this.remember(key, b);
    return b.tokens >= 1 ? 0 : Math.ceil((1 - b.tokens) * this.limits.refill_ms);
  }

  take(key: string, now_ms: number): void {
    const b = this.current(key, now_ms);
    b.tokens = Math.max(0, b.tokens - 1);
    this.remember(key, b);
  }

  /** wait() and, when it gives 0, take(), in one look: 0 when counted, else the ms until one may. */
  admit(key: string, now_ms: number): number {
    const b = this.current(key, now_ms);
    this.remember(key, b);
    if (b.tokens < 1) return Math.ceil((1 - b.tokens) * this.limits.refill_ms);
    b.tokens -= 1;
    return 0;
  }

  /**
   * Makes `key` the most recently used (the map's order is least recently used first). The key used
   * last is at the end already: a flood from one user or address does not move it on every request.
   */
  private remember(key: string, b: Bucket): void {
    if (key === this.lastKey && this.buckets.get(key) === b) return;
    this.buckets.delete(key);
    this.buckets.set(key, b);
    this.lastKey = key;
    while (this.buckets.size > this.entriesMax) this.buckets.delete(this.buckets.keys().next().value as string);
  }

  get size(): number {
    return this.buckets.size;
  }
}

export interface LoginUsers {
  get(name: string): { readonly passwordHash: string } | undefined;
}

export class LoginGate {
  private readonly byUser: TokenBuckets;
  private readonly byAddress: TokenBuckets;

  constructor(
    private readonly verifier: PasswordVerifier,
    private readonly now: () => number,
    limits: { user?: BucketLimits; address?: BucketLimits } = {},
  ) {
    this.byUser = new TokenBuckets(limits.user ?? LOGIN_USER_LIMITS);
    this.byAddress = new TokenBuckets(limits.address ?? LOGIN_ADDRESS_LIMITS);
  }

  /**
   * Resolves when `password` is the user's. Throws LoginRateLimitedError (over a limit, or the
   * password pool's queue is full) or AuthError `bad-credentials` (no such user, or a wrong password).
   * `address`: the client's address, null when the caller does not know it.
   */
  async check(users: LoginUsers, user: string, password: string, address: string | null): Promise<void> {
    const now_ms = this.now();
    const userWait = this.byUser.wait(user, now_ms);
    const addressWait = address === null ? 0 : this.byAddress.wait(address, now_ms);
    if (userWait > 0 || addressWait > 0) {
      const wait_ms = Math.max(userWait, addressWait);
      const who = userWait > 0 ? `for user ${user}` : `from ${address}`;
      throw new LoginRateLimitedError(
        `too many login attempts ${who}; retry in ${Math.ceil(wait_ms / 1000)} s`,
        wait_ms,
      );
    }
    this.byUser.take(user, now_ms);
    if (address !== null) this.byAddress.take(address, now_ms);
    const u = users.get(user);
    let ok: boolean;
    try {
      ok = await this.verifier.verify(password, u?.passwordHash ?? DUMMY_PASSWORD_HASH);
    } catch (err) {
      if (err instanceof PasswordPoolBusyError)
        throw new LoginRateLimitedError(`too many logins in progress: ${err.message}`, 1_000);
      ok = false; // a malformed stored hash: the same answer as a wrong password
    }
    // The same message whether the user or the password is wrong: do not reveal which users exist.
    if (!ok || u === undefined) throw new AuthError('bad-credentials', 'user name or password is not correct');
  }
}
