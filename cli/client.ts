// The typed client library (the brief's "libxce"): what `xcecli` and `xceadmin` use, and what
// the package exports so a program can submit and watch jobs without shelling out.
//
// It talks to any controller; a follower answers `not-leader` with the leader's address and the
// client follows it (daemon/net/leader-follower.ts, the worker's mechanism too). A write carries a
// session (client id + sequence): after a failover the client retries the SAME (client, seq) until
// some controller answers, and the state machine's session table makes sure the write is applied once.

import type { SecureContextOptions } from 'node:tls';
import { randomBytes } from 'node:crypto';
import { type ApiErrorBody, type JobSpec, type Op, type OpArgs, TOKENLESS_OPS, WRITE_OPS } from '../api/protocol.js';
import type {
  AppDetail,
  AppList,
  CallResult,
  DryRunResult,
  JobDetails,
  JobList,
  LoginResult,
  Operations,
  SubmitResult,
} from '../api/responses.js';
import { Backoff, LeaderFollower } from '../daemon/net/leader-follower.js';
import { ApiError, RETRYABLE_CODES, WaitedOut } from './api-error.js';
import { Connection } from './connection.js';
import { isExpiredTokenAnswer, nearExpiry } from './token-refresh.js';

export const REQUEST_TIMEOUT_MS_DEFAULT = 5_000;
/** How long a call keeps retrying through failovers before it gives up. */
export const CALL_DEADLINE_MS_DEFAULT = 30_000;
export const RETRY_BACKOFF_MS_MIN = 10;
/** Kept short: during an election a controller answers `no-leader` at once, and the new leader is
 * usually there within half a second. */
export const RETRY_BACKOFF_MS_MAX = 100;
/** Writes one client has in flight at once (each on its own session). */
export const SESSIONS_PER_CLIENT_MAX = 64;
/** After `rate-limited` the client waits the controller's retryAfter_ms, or this backoff (doubling
 * from RETRY_BACKOFF_MS_MIN) when longer: a client that keeps hitting the limit slows down. */
export const RATE_LIMITED_BACKOFF_MS_MAX = 2_000;
/** A call with no answer and no open connection for this long tells `onStall` what it is trying. */
export const STALL_NOTICE_MS = 2_000;

export { ApiError, RETRYABLE_CODES } from './api-error.js';
export { KEEPALIVE_MS } from './connection.js';

export interface ClientOptions {
  /** `host:port` (or `wss://host:port`, `ws://host:port`) of one or more controllers. */
  readonly controllers: readonly string[];
  /**
   * Dial `host:port` over TLS (wss://), verifying the controllers' certificate against `ca` (PEM)
   * or, without it, the system's CAs; null or absent: plain ws:// (a development cluster with
   * insecure_dev). xcecli sets it from XCE_CA_FILE / XCE_INSECURE_DEV (cli/settings.ts).
   */
  readonly tls?: { readonly ca?: SecureContextOptions['ca'] } | null;
  readonly token?: string;
  /**
   * The refresh token of a login: the client renews its access token with it (`auth.refresh`) when
   * the token is near expiry or a controller says it expired (token-refresh.ts).
   */
  readonly refreshToken?: string;
  /** Called with each access token the client got by refreshing (xcecli stores it). */
  readonly onTokenRefreshed?: (token: string) => void;
  /** Stable per client process; a retry after a failover reuses it. */
  readonly clientId?: string;
  readonly requestTimeout_ms?: number;
  /** How long a call keeps trying (through failovers, unreachable controllers) before it fails. */
  readonly callDeadline_ms?: number;
  /** Called once when a call has waited `stallNotice_ms` without a connection (xcecli prints it). */
  readonly onStall?: (stall: Stall) => void;
  readonly stallNotice_ms?: number;
}

/** A call waiting without a connection: the addresses tried, how long so far, the call's deadline. */
export interface Stall {
  readonly addresses: readonly string[];
  readonly waited_ms: number;
  readonly deadline_ms: number;
}

export function toWsUrl(address: string, secure = false): string {
  const base = /^wss?:\/\//.test(address) ? address : `${secure ? 'wss' : 'ws'}://${address}`;
  return base.replace(/\/+$/, '').replace(/\/api$/, '') + '/api';
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export class XceClient {
  private readonly follower: LeaderFollower;
  private clientId: string;
  /** The user the sessions were opened for (a session belongs to one user: another's use is refused). */
  private sessionUser: string | undefined;
  /** Sessions not carrying a write right now. The state machine keeps one result per session, so a
   * session carries one write at a time; concurrent writes each take their own session. */
  private readonly idleSessions: Array<{ client: string; seq: number }> = [];
  private sessionCount = 0;
  /** Sessions named so far under `clientId`. */
  private sessionSerial = 0;
  private readonly sessionWaiters: Array<(s: { client: string; seq: number }) => void> = [];
  private conn: Connection | null = null;
  /** onStall was told; again only after a controller has answered. */
  private stallNoticed = false;
  token: string | undefined;
  refreshToken: string | undefined;
  /** The refresh under way, shared by the calls that need it. */
  private refreshing: Promise<void> | null = null;

  constructor(private readonly options: ClientOptions) {
    if (options.controllers.length === 0)
      throw new ApiError(
        'unreachable',
        'no controller address given (use --controllers, XCE_CONTROLLERS or the config file)',
      );
    const secure = options.tls !== undefined && options.tls !== null;
    this.follower = new LeaderFollower({ addresses: options.controllers, toUrl: (a) => toWsUrl(a, secure) });
    this.clientId = options.clientId ?? `c-${randomBytes(12).toString('hex')}`;
    this.token = options.token;
    this.refreshToken = options.refreshToken;
  }

  /**
   * Sends one request, following the leader and retrying through failovers until the deadline.
   * Resolves with the operation's result (api/responses.ts OpResults): `call('jobs.submit', { job })`
   * is a SubmitResult, with `dryRun: true` a DryRunResult.
   */
  async call<O extends Op, A extends Operations[O]['args']>(
    op: O,
    args: A,
    opts: { stale?: boolean } = {},
  ): Promise<CallResult<O, A>> {
    const renewable = !TOKENLESS_OPS.has(op) && this.refreshToken !== undefined;
    if (renewable && this.token !== undefined && nearExpiry(this.token, Date.now())) await this.refresh();
    try {
      return await this.callOnce(op, args, opts);
    } catch (err) {
      if (!renewable || !(err instanceof ApiError) || !isExpiredTokenAnswer(err.code, err.message)) throw err;
      await this.refresh();
      return this.callOnce(op, args, opts);
    }
  }

  /** A new access token for the refresh token (`auth.refresh`); one at a time, shared by the calls waiting. */
  async refresh(): Promise<string> {
    const refreshToken = this.refreshToken;
    if (refreshToken === undefined)
      throw new ApiError('unauthenticated', 'no refresh token: log in with `xcecli login`');
    this.refreshing ??= (async () => {
      try {
        const r = (await this.send({ op: 'auth.refresh', args: { refreshToken } })) as LoginResult;
        this.token = r.token;
        this.options.onTokenRefreshed?.(r.token);
      } finally {
        this.refreshing = null;
      }
    })();
    await this.refreshing;
    return this.token!;
  }

  private async callOnce<O extends Op, A extends Operations[O]['args']>(
    op: O,
    args: A,
    opts: { stale?: boolean },
  ): Promise<CallResult<O, A>> {
    const frame: Record<string, unknown> = { op, args };
    if (this.token !== undefined) frame['token'] = this.token;
    if (opts.stale) frame['stale'] = true;
    // The one place where the wire meets the types: the controller answers `op` with OpResults[op].
    if (!WRITE_OPS.has(op)) return (await this.send(frame)) as CallResult<O, A>;
    const session = await this.takeSession();
    session.seq++;
    frame['session'] = { client: session.client, seq: session.seq };
    try {
      return (await this.send(frame)) as CallResult<O, A>;
    } finally {
      this.releaseSession(session);
    }
  }

  private takeSession(): Promise<{ client: string; seq: number }> {
    const idle = this.idleSessions.pop();
    if (idle !== undefined) return Promise.resolve(idle);
    if (this.sessionCount < SESSIONS_PER_CLIENT_MAX) {
      this.sessionCount++;
      return Promise.resolve(this.newSession());
    }
    return new Promise((resolve) => this.sessionWaiters.push(resolve));
  }

  /** A session never used: the client id itself first, then `<id>.1`, `<id>.2`, ... */
  private newSession(): { client: string; seq: number } {
    const n = this.sessionSerial++;
    return { client: n === 0 ? this.clientId : `${this.clientId}.${n}`, seq: 0 };
  }

  private releaseSession(s: { client: string; seq: number }): void {
    // A session of the user before the last login is not used again: a new one takes its place.
    if (s.client !== this.clientId && !s.client.startsWith(`${this.clientId}.`)) s = this.newSession();
    const next = this.sessionWaiters.shift();
    if (next !== undefined) next(s);
    else this.idleSessions.push(s);
  }

  private async send(frame: Record<string, unknown>): Promise<unknown> {
    const deadline_ms = this.options.callDeadline_ms ?? CALL_DEADLINE_MS_DEFAULT;
    const deadline = Date.now() + deadline_ms;
    const backoff = new Backoff(RETRY_BACKOFF_MS_MIN, RETRY_BACKOFF_MS_MAX);
    let rateBackoff = RETRY_BACKOFF_MS_MIN;
    // The error given at the deadline, as code and message: an Error made here for every call
    // (its stack captured) cost the bench's 16 clients more than their submits' own work.
    let last: { readonly code: ApiError['code']; readonly message: string } = {
      code: 'unreachable',
      message: 'no controller answered',
    };
    let answered = false;
    let saysWhy = false; // `last` names a cause (not only that an attempt ran out of time)
    const stalled = this.noticeStall(deadline_ms);
    try {
      while (Date.now() < deadline) {
        if (this.follower.closed)
          throw new ApiError('closed', `the client was closed (${String(frame['op'])} not sent again)`);
        let error: ApiErrorBody | ApiError;
        const conn = this.connection();
        try {
          const r = await conn.send(
            frame,
            Math.min(this.options.requestTimeout_ms ?? REQUEST_TIMEOUT_MS_DEFAULT, Math.max(1, deadline - Date.now())),
          );
          this.stallNoticed = false;
          if (r.ok) {
            this.follower.reached();
            return r.result;
          }
          error = r.error;
        } catch (err) {
          error = err instanceof ApiError ? err : new ApiError('unreachable', (err as Error).message);
          this.drop(conn);
        }
        // A controller's own answer (e.g. its accounting store cannot be used) is what the user is
        // told at the deadline, not a transport failure that came after it; and a failure that names
        // its cause (a certificate refused) is not replaced by a later attempt that ran out of time.
        const current = error instanceof ApiError ? error : new ApiError(error.code, error.message);
        if (!RETRYABLE_CODES.has(error.code)) throw current;
        if (!(error instanceof ApiError)) answered = true;
        if ((!(error instanceof ApiError) || !answered) && !(current instanceof WaitedOut && saysWhy)) {
          last = current;
          saysWhy = !(current instanceof WaitedOut);
        }
        if (!(error instanceof ApiError) && error.code === 'rate-limited') {
          // The limit is the controller's, not the connection's: same connection, after the wait it asks for.
          const wait = Math.max(error.retryAfter_ms ?? 0, rateBackoff);
          if (wait > deadline - Date.now())
            throw new ApiError('rate-limited', `${error.message} (not retried: the call's deadline comes first)`);
          await sleep(wait + Math.random() * wait * 0.2);
          rateBackoff = Math.min(rateBackoff * 2, RATE_LIMITED_BACKOFF_MS_MAX);
          continue;
        }
        if (
          !(error instanceof ApiError) &&
          error.code === 'not-leader' &&
          this.follower.follow(conn.url, error.leader?.address)
        )
          continue;
        this.drop(conn);
        this.follower.next(conn.url);
        await sleep(Math.min(backoff.next(), Math.max(0, deadline - Date.now())));
      }
    } finally {
      clearTimeout(stalled);
    }
    throw new ApiError(last.code, `${last.message} (gave up after ${deadline_ms} ms)`);
  }

  /**
   * Tells `onStall` which controllers the client is trying when a call has had no answer for
   * STALL_NOTICE_MS and no connection is open (an address nothing listens on, a controller host
   * that is down): once until a controller answers again.
   */
  private noticeStall(deadline_ms: number): NodeJS.Timeout | undefined {
    const onStall = this.options.onStall;
    if (onStall === undefined) return undefined;
    const waited_ms = this.options.stallNotice_ms ?? STALL_NOTICE_MS;
    const timer = setTimeout(() => {
      if (this.follower.closed || this.conn?.isOpen === true || this.stallNoticed) return;
      this.stallNoticed = true;
      onStall({ addresses: this.follower.addresses(), waited_ms, deadline_ms });
    }, waited_ms);
    timer.unref();
    return timer;
  }

  private connection(): Connection {
    const url = this.follower.current();
    if (this.conn !== null && (this.conn.closed || this.conn.url !== url)) this.drop(this.conn);
    if (this.conn === null) this.conn = new Connection(url, this.options.tls?.ca);
    return this.conn;
  }

  /** Closes `conn`, the client's connection unless another call replaced it already. */
  private drop(conn: Connection): void {
    conn.close();
    if (this.conn === conn) this.conn = null;
  }

  /** Closes the connection for good: calls in flight and later ones fail with ApiError 'closed'
   * instead of reconnecting and retrying until their deadline. */
  close(): void {
    this.follower.close();
    if (this.conn !== null) this.drop(this.conn);
  }

  // ---- typed helpers ----

  /** Logs in: later calls carry the token (LoginResult's), which is also returned. */
  async login(user: string, password: string): Promise<string> {
    return (await this.loginResult(user, password)).token;
  }

  /** Logs in: later calls carry the access token and renew it with the refresh token (both in the result). */
  async loginResult(user: string, password: string): Promise<LoginResult> {
    const r = await this.call('login', { user, password });
    this.token = r.token;
    this.refreshToken = r.refreshToken;
    if (this.sessionUser !== undefined && this.sessionUser !== user) {
      // Writes as another user go in new sessions: the controllers bind a session to its first user.
      this.clientId = `c-${randomBytes(12).toString('hex')}`;
      this.sessionSerial = 0;
      this.sessionCount -= this.idleSessions.length;
      this.idleSessions.length = 0;
    }
    this.sessionUser = user;
    return r;
  }
  /** Submits a job; with `dryRun`, answers what it would run with and submits nothing. */
  submit(job: JobSpec, dryRun?: false): Promise<SubmitResult>;
  submit(job: JobSpec, dryRun: true): Promise<DryRunResult>;
  submit(job: JobSpec, dryRun?: boolean): Promise<SubmitResult | DryRunResult>;
  submit(job: JobSpec, dryRun = false): Promise<SubmitResult | DryRunResult> {
    return this.call('jobs.submit', dryRun ? { job, dryRun } : { job });
  }
  listJobs(filter: OpArgs<'jobs.list'> = {}): Promise<JobList> {
    return this.call('jobs.list', filter);
  }
  showJob(id: number): Promise<JobDetails> {
    return this.call('jobs.show', { id });
  }
  /**
   * Watches a job: yields its details each time its state (or pend reason) changes, and returns
   * once it is DONE or EXIT. Polls with linearizable reads every `interval_ms`; bounded by
   * `timeout_ms` (then throws ApiError 'timeout').
   */
  async *watch(
    id: number,
    opts: { interval_ms?: number; timeout_ms?: number } = {},
  ): AsyncGenerator<Record<string, unknown>, Record<string, unknown>> {
    const interval = opts.interval_ms ?? 500;
    const end = Date.now() + (opts.timeout_ms ?? 24 * 3600_000);
    let last = '';
    for (;;) {
      const d: Record<string, unknown> = { ...(await this.showJob(id)) };
      const key = `${String(d['state'])}|${String(d['pendReason'])}|${String(d['runNumber'])}`;
      if (key !== last) {
        last = key;
        if (d['state'] === 'DONE' || d['state'] === 'EXIT') return d;
        yield d;
      }
      if (Date.now() > end) throw new ApiError('timeout', `job ${id} did not finish within ${opts.timeout_ms} ms`);
      await sleep(interval);
    }
  }

  listApps(): Promise<AppList> {
    return this.call('apps.list', {});
  }
  showApp(name: string): Promise<AppDetail> {
    return this.call('apps.show', { name });
  }
}
