// The typed client library (the brief's "libxce"): what `xcecli` and `xceadmin` use, and what
// the package exports so a program can submit and watch jobs without shelling out.
//
// It talks to any controller; a follower answers `not-leader` with the leader's address and the
// client follows it. A write carries a session (client id + sequence): after a failover the
// client retries the SAME (client, seq) until some controller answers, and the state machine's
// session table makes sure the write is applied once.

import { randomBytes } from 'node:crypto';
import { type ApiErrorBody, type JobSpec, type Op, type OpArgs, WRITE_OPS } from '../api/protocol.js';
import type {
  AppDetail,
  AppList,
  DryRunResult,
  JobDetails,
  JobList,
  OpResult,
  SubmitResult,
} from '../api/responses.js';
import { ApiError, RETRYABLE_CODES } from './api-error.js';
import { Connection } from './connection.js';

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
/** A `not-leader` redirect chain longer than this means the cluster is electing: back off. */
const REDIRECTS_MAX = 4;

export { ApiError, RETRYABLE_CODES } from './api-error.js';
export { KEEPALIVE_MS } from './connection.js';

export interface ClientOptions {
  /** `host:port` or `ws://host:port` of one or more controllers. */
  readonly controllers: readonly string[];
  readonly token?: string;
  /** Stable per client process; a retry after a failover reuses it. */
  readonly clientId?: string;
  readonly requestTimeout_ms?: number;
  readonly callDeadline_ms?: number;
}

export function toWsUrl(address: string): string {
  const base = /^wss?:\/\//.test(address) ? address : `ws://${address}`;
  return base.replace(/\/+$/, '').replace(/\/api$/, '') + '/api';
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export class XceClient {
  private readonly urls: string[];
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
  /** close() was called: no call is sent again. */
  private closedByCaller = false;
  private next = 0;
  token: string | undefined;

  constructor(private readonly options: ClientOptions) {
    if (options.controllers.length === 0)
      throw new ApiError(
        'unreachable',
        'no controller address given (use --controllers, XCE_CONTROLLERS or the config file)',
      );
    this.urls = options.controllers.map(toWsUrl);
    this.clientId = options.clientId ?? `c-${randomBytes(12).toString('hex')}`;
    this.token = options.token;
  }

  /**
   * Sends one request, following the leader and retrying through failovers until the deadline.
   * Resolves with the operation's result as the controller sent it: an OpResult<O>
   * (api/responses.ts), which the typed helpers below return as such.
   */
  async call<O extends Op>(op: O, args: OpArgs<O>, opts: { stale?: boolean } = {}): Promise<unknown> {
    const frame: Record<string, unknown> = { op, args };
    if (this.token !== undefined) frame['token'] = this.token;
    if (opts.stale) frame['stale'] = true;
    if (!WRITE_OPS.has(op)) return this.send(frame);
    const session = await this.takeSession();
    session.seq++;
    frame['session'] = { client: session.client, seq: session.seq };
    try {
      return await this.send(frame);
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
    const deadline = Date.now() + (this.options.callDeadline_ms ?? CALL_DEADLINE_MS_DEFAULT);
    let backoff = RETRY_BACKOFF_MS_MIN;
    let rateBackoff = RETRY_BACKOFF_MS_MIN;
    let redirects = 0;
    let last: ApiError = new ApiError('unreachable', 'no controller answered');
    while (Date.now() < deadline) {
      if (this.closedByCaller)
        throw new ApiError('closed', `the client was closed (${String(frame['op'])} not sent again)`);
      let error: ApiErrorBody | ApiError;
      try {
        const conn = this.connection();
        const r = await conn.send(
          frame,
          Math.min(this.options.requestTimeout_ms ?? REQUEST_TIMEOUT_MS_DEFAULT, Math.max(1, deadline - Date.now())),
        );
        if (r.ok) return r.result;
        error = r.error;
      } catch (err) {
        error = err instanceof ApiError ? err : new ApiError('unreachable', (err as Error).message);
        this.drop();
      }
      last = error instanceof ApiError ? error : new ApiError(error.code, error.message);
      if (!RETRYABLE_CODES.has(error.code)) throw last;
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
        error.leader !== undefined &&
        redirects < REDIRECTS_MAX
      ) {
        redirects++;
        this.useUrl(toWsUrl(error.leader.address));
        continue;
      }
      redirects = 0;
      this.drop();
      this.next++;
      await sleep(Math.min(backoff, Math.max(0, deadline - Date.now())));
      backoff = Math.min(backoff * 2, RETRY_BACKOFF_MS_MAX);
    }
    throw new ApiError(
      last.code,
      `${last.message} (gave up after ${this.options.callDeadline_ms ?? CALL_DEADLINE_MS_DEFAULT} ms)`,
    );
  }

  private connection(): Connection {
    if (this.conn === null || this.conn.closed)
      this.conn = new Connection(this.urls[this.next % this.urls.length] as string);
    return this.conn;
  }

  private useUrl(url: string): void {
    if (this.conn?.url === url && !this.conn.closed) return;
    this.drop();
    let i = this.urls.indexOf(url);
    if (i < 0) {
      this.urls.push(url);
      i = this.urls.length - 1;
    }
    this.next = i;
  }

  private drop(): void {
    this.conn?.close();
    this.conn = null;
  }

  /** Closes the connection for good: calls in flight and later ones fail with ApiError 'closed'
   * instead of reconnecting and retrying until their deadline. */
  close(): void {
    this.closedByCaller = true;
    this.drop();
  }

  // ---- typed helpers ----

  /** The operation's result, typed (api/responses.ts). */
  private async typed<O extends Op>(op: O, args: OpArgs<O>): Promise<OpResult<O>> {
    return (await this.call(op, args)) as OpResult<O>;
  }

  /** Logs in: later calls carry the token (LoginResult's), which is also returned. */
  async login(user: string, password: string): Promise<string> {
    const r = await this.typed('login', { user, password });
    this.token = r.token;
    if (this.sessionUser !== undefined && this.sessionUser !== user) {
      // Writes as another user go in new sessions: the controllers bind a session to its first user.
      this.clientId = `c-${randomBytes(12).toString('hex')}`;
      this.sessionSerial = 0;
      this.sessionCount -= this.idleSessions.length;
      this.idleSessions.length = 0;
    }
    this.sessionUser = user;
    return r.token;
  }
  /** Submits a job; with `dryRun`, answers what it would run with and submits nothing. */
  submit(job: JobSpec, dryRun?: false): Promise<SubmitResult>;
  submit(job: JobSpec, dryRun: true): Promise<DryRunResult>;
  submit(job: JobSpec, dryRun?: boolean): Promise<SubmitResult | DryRunResult>;
  submit(job: JobSpec, dryRun = false): Promise<SubmitResult | DryRunResult> {
    return this.typed('jobs.submit', dryRun ? { job, dryRun } : { job });
  }
  listJobs(filter: OpArgs<'jobs.list'> = {}): Promise<JobList> {
    return this.typed('jobs.list', filter);
  }
  showJob(id: number): Promise<JobDetails> {
    return this.typed('jobs.show', { id });
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
    return this.typed('apps.list', {});
  }
  showApp(name: string): Promise<AppDetail> {
    return this.typed('apps.show', { name });
  }
}
