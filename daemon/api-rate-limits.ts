// The client API's rate limits: token buckets per user and per client address (api-admission-limits.ts
// API_USER_RATE, API_ADDRESS_RATE), and the `rate-limited` answer with `retryAfter_ms`, which the
// client library waits before it sends the request again.

import type { Response } from '../api/protocol.js';
import type { AdmissionClock } from './api-admission-limits.js';
import { TokenBuckets, type BucketLimits } from './login-gate.js';

export class ApiRateLimits {
  private readonly byUser: TokenBuckets;
  private readonly byAddress: TokenBuckets;
  private limited = 0;

  constructor(
    readonly userRate: BucketLimits,
    readonly addressRate: BucketLimits,
    private readonly clock: AdmissionClock,
  ) {
    this.byUser = new TokenBuckets(userRate);
    this.byAddress = new TokenBuckets(addressRate);
  }

  /** Requests refused since start. */
  get rateLimited(): number {
    return this.limited;
  }

  /** 0 when a request from `address` may go ahead (it is counted), else the ms until one may. */
  admitAddress(address: string): number {
    return this.take(this.byAddress, address);
  }

  /** 0 when a request of `user` may go ahead (it is counted), else the ms until one may. */
  admitUser(user: string): number {
    return this.take(this.byUser, user);
  }

  private take(buckets: TokenBuckets, key: string): number {
    const now = this.clock.now();
    const wait = buckets.wait(key, now);
    if (wait > 0) {
      this.limited++;
      return wait;
    }
    buckets.take(key, now);
    return 0;
  }
}

/** The answer to request `id` refused for `wait_ms` by the limits `limits` applied to `who` (`for user bob`, `from 10.0.0.1`). */
export function rateLimitedAnswer(id: number, wait_ms: number, who: string, limits: BucketLimits): Response {
  const perSecond = Math.round(1_000 / limits.refill_ms);
  return {
    id,
    ok: false,
    error: {
      code: 'rate-limited',
      message: `too many requests ${who} (more than ${perSecond} a second); retry in ${wait_ms} ms`,
      retryAfter_ms: wait_ms,
    },
  };
}
