// The client API's rate limits: token buckets per user and per client address (api-admission-limits.ts
// API_USER_RATE, API_ADDRESS_RATE), and the `rate-limited` answer with `retryAfter_ms`, which the
// client library waits before it sends the request again.

import type { ApiErrorBody, Response } from '../api/protocol.js';
import type { AdmissionClock } from './api-admission-limits.js';
import { TokenBuckets, type BucketLimits } from './login-gate.js';

export class ApiRateLimits {
  private readonly byUser: TokenBuckets;
  private readonly byAddress: TokenBuckets;
  private readonly limitedBy = { user: 0, address: 0 };

  constructor(
    readonly userRate: BucketLimits,
    readonly addressRate: BucketLimits,
    private readonly clock: AdmissionClock,
    /** The limits these replace: their counts carry on. */
    before: ApiRateLimits | null = null,
  ) {
    this.byUser = new TokenBuckets(userRate);
    this.byAddress = new TokenBuckets(addressRate);
    if (before !== null) Object.assign(this.limitedBy, before.limitedBy);
  }

  /** Requests refused since start. */
  get rateLimited(): number {
    return this.limitedBy.user + this.limitedBy.address;
  }

  /** Requests refused since start, by the limit that refused them. */
  get rateLimitedBy(): Readonly<Record<'user' | 'address', number>> {
    return { ...this.limitedBy };
  }

  /** 0 when a request from `address` may go ahead (it is counted), else the ms until one may. */
  admitAddress(address: string): number {
    return this.take(this.byAddress, address, 'address');
  }

  /** 0 when a request of `user` may go ahead (it is counted), else the ms until one may. */
  admitUser(user: string): number {
    return this.take(this.byUser, user, 'user');
  }

  private take(buckets: TokenBuckets, key: string, kind: 'user' | 'address'): number {
    const now = this.clock.now();
    const wait = buckets.admit(key, now);
    if (wait > 0) this.limitedBy[kind]++;
    return wait;
  }
}

/**
 * The error for a request refused for `wait_ms` by the limits `limits` (xce.yaml `key`) applied to
 * `who` (`for user bob`, `from 10.0.0.1`).
 */
export function rateLimitedError(wait_ms: number, who: string, limits: BucketLimits, key: string): ApiErrorBody {
  const perSecond = Math.round(1_000 / limits.refill_ms);
  return {
    code: 'rate-limited',
    message: `too many requests ${who} (more than ${perSecond} a second, ${key}); retry in ${wait_ms} ms`,
    retryAfter_ms: wait_ms,
  };
}

/** The answer to request `id` refused for `wait_ms` by the limits `limits` (xce.yaml `key`) applied to `who`. */
export function rateLimitedAnswer(
  id: number,
  wait_ms: number,
  who: string,
  limits: BucketLimits,
  key: string,
): Response {
  return { id, ok: false, error: rateLimitedError(wait_ms, who, limits, key) };
}

/**
 * One connection's frame bucket. A frame already read is always counted, so the bucket may go into
 * debt (a flood read in one TCP read): `take` then says how long the socket must not be read for
 * the average to come back down to the rate.
 */
export class FrameBucket {
  private tokens: number;
  private at_ms: number;

  constructor(
    readonly limits: BucketLimits,
    now_ms: number,
  ) {
    this.tokens = limits.burst;
    this.at_ms = now_ms;
  }

  /** Counts one frame: 0 when within the rate, else the ms until the bucket is out of debt. */
  take(now_ms: number): number {
    const gained = Math.max(0, now_ms - this.at_ms) / this.limits.refill_ms;
    this.tokens = Math.min(this.limits.burst, this.tokens + gained) - 1;
    this.at_ms = now_ms;
    return this.tokens >= 0 ? 0 : Math.ceil(-this.tokens * this.limits.refill_ms);
  }
}
