// How a client of the controllers finds the leader: the one mechanism of the client library
// (cli/client.ts, `/api`) and the worker (daemon/worker/leader-link.ts, `/worker`). A list of
// controller addresses, tried in turn; a `not-leader` answer's hint followed to the leader (a
// bounded chain of hops, since during an election the hints can go round); a doubling back-off
// between rounds; closed for good by its owner. It owns no socket: each user dials `current()`
// its own way (a request/response connection, a registration) and tells the follower how it went.

/** `not-leader` hops followed in a row before backing off (the cluster is electing). */
export const REDIRECTS_MAX = 4;

/** A doubling delay between `min_ms` and `max_ms`; with `random`, each delay is drawn from its upper half. */
export class Backoff {
  private current_ms: number;

  constructor(
    private readonly min_ms: number,
    private readonly max_ms: number,
    private readonly random?: () => number,
  ) {
    if (!(min_ms >= 0 && max_ms >= min_ms))
      throw new RangeError(`back-off bounds must be 0 <= min <= max, got min ${min_ms} ms, max ${max_ms} ms`);
    this.current_ms = min_ms;
  }

  /** The delay to wait now; the next one is twice as long, up to the maximum (and to `cap_ms` when given). */
  next(cap_ms = Infinity): number {
    const base = Math.min(this.current_ms, cap_ms);
    this.current_ms = Math.min(this.current_ms * 2, this.max_ms, cap_ms);
    return this.random === undefined ? base : Math.round(base * (0.5 + 0.5 * this.random()));
  }

  /** Back to the shortest delay (after a success). */
  reset(): void {
    this.current_ms = this.min_ms;
  }

  /** The longest delay from now on (nothing will change soon: a refusal an administrator must act on). */
  toMax(): void {
    this.current_ms = this.max_ms;
  }
}

interface Target {
  readonly address: string;
  readonly url: string;
}

export interface LeaderFollowerOptions {
  /** `host:port` (or a URL) of one or more controllers. */
  readonly addresses: readonly string[];
  /** The endpoint's URL for an address (given or from a leader hint): `/api`, `/worker`. */
  readonly toUrl: (address: string) => string;
  readonly redirectsMax?: number;
}

/** Which controller to dial next. */
export class LeaderFollower {
  private readonly targets: Target[];
  private index = 0;
  private redirects = 0;
  private closedByOwner = false;

  constructor(private readonly opts: LeaderFollowerOptions) {
    if (opts.addresses.length === 0) throw new RangeError('no controller address given');
    this.targets = opts.addresses.map((address) => ({ address, url: opts.toUrl(address) }));
  }

  /** The URL to dial now. */
  current(): string {
    return (this.targets[this.index % this.targets.length] as Target).url;
  }

  /** Every address known, in order: the ones given, then leaders learnt from hints. */
  addresses(): string[] {
    return this.targets.map((t) => t.address);
  }

  /**
   * A `not-leader` answer from `fromUrl`: true when its hint is to be followed (`current()` is the
   * leader's URL now), false when the caller should back off and try the next controller (no hint,
   * a hint back to the sender, or too many hops in a row). Answers that name the leader already
   * being dialled (several requests in flight when leadership moved) are not another hop.
   */
  follow(fromUrl: string, leaderAddress: string | undefined): boolean {
    if (leaderAddress === undefined) return false;
    const url = this.opts.toUrl(leaderAddress);
    if (url === fromUrl) return false;
    if (url === this.current()) return true;
    if (this.redirects >= (this.opts.redirectsMax ?? REDIRECTS_MAX)) return false;
    this.redirects++;
    let i = this.targets.findIndex((t) => t.url === url);
    if (i < 0) {
      this.targets.push({ address: leaderAddress, url });
      i = this.targets.length - 1;
    }
    this.index = i;
    return true;
  }

  /** `url` failed (unreachable, no leader, a chain of hints too long): the next controller, a new chain. */
  next(url: string): void {
    this.redirects = 0;
    // Another request may have moved on already (to the leader): it stays there.
    if (url === this.current()) this.index = (this.index + 1) % this.targets.length;
  }

  /** The controller at `current()` answered as the leader: a later hint starts a new chain. */
  reached(): void {
    this.redirects = 0;
  }

  /** No more dialling: the owner closed its client. */
  close(): void {
    this.closedByOwner = true;
  }

  get closed(): boolean {
    return this.closedByOwner;
  }
}
