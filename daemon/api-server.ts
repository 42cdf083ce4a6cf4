// The client API (`/api`): JSON frames validated with zod (api/protocol.ts), a JWT on every request
// but `login`, RBAC checked here early (and again, authoritatively, in apply), writes proposed as
// facts through the leader, reads made linearizable with ReadIndex unless the client asks for a
// possibly stale local read.
//
// A follower answers a write with `not-leader` and the leader's address; the client library
// follows it and retries with the same session, so a submit is applied once.

import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  API_FRAME_BYTES_MAX,
  RequestError,
  parseRequest,
  requestIdOf,
  type ApiErrorBody,
  type ErrorCode,
  type JobSpec as ApiJobSpec,
  type OpArgs,
  type Request,
  type Session,
} from '../api/protocol.js';
import { AuthError, TokenAuthority, TOKEN_TTL_S_DEFAULT, TOKEN_TTL_S_MAX } from './auth.js';
import { LoginGate, LoginRateLimitedError } from './login-gate.js';
import { sharedPasswordPool } from './password-pool.js';
import {
  ApiAdmission,
  clientAddress,
  type ApiAdmissionStats,
  type ApiHandler,
  type ApiSocket,
} from './api-admission.js';
import { ControllerNode, NodeUnavailableError, ProposalRejectedError } from './controller-node.js';
import type { Logger } from './log.js';
import type { ControllerMetrics } from './metrics.js';
import { encodeFact } from '../statemachine/facts-codec.js';
import type { ApplyResult, Fact, FactBody, JobSpec, RejectCode } from '../statemachine/facts.js';
import { hideProfileValues, jobDetails, profileHiddenNote, resreqTerms } from '../statemachine/queries.js';
import { pendReason, submitFactFor } from '../statemachine/jobs.js';
import { admitSubmit, type Admission } from '../statemachine/admission.js';
import { JobValueError, jobSpecOf } from '../model/job-own-values.js';
import { peekSession } from '../statemachine/sessions.js';
import { profileNotDefinedReason, resolveProfile } from '../model/profiles.js';
import { authorize, mayViewProfile, type AuthzScope } from '../model/rbac.js';
import { baseName, loadConfig } from '../model/config.js';
import { isMap, isSeq, parseDocument } from 'yaml';
import { profileHash, profileLabel } from '../model/profile-hash.js';
import { formatDuration, formatSize } from '../model/units.js';
import type { ClusterConfig, Permission } from '../model/config-types.js';
import type { ControllerState, Job } from '../statemachine/state.js';
import type { Profile } from '../model/profile-types.js';
import { ConfChangeType } from '../raft/confchange.js';

// Requests in flight per connection, connections per address, rate limits and the per-turn
// scheduling of requests: daemon/api-admission.ts.
/** Jobs a list returns unless the request asks for fewer. */
export const LIST_LIMIT_DEFAULT = 1000;
/** The queue of a job submitted without `-q` (LSF's DEFAULT_QUEUE), when the configuration has it. */
export const DEFAULT_QUEUE = 'normal';

class ApiFailure extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly leader?: { id: number; address: string },
    /** With `rate-limited`: when the client may try again. */
    readonly retryAfter_ms?: number,
  ) {
    super(message);
  }
}

export class ApiServer {
  private readonly wss = new WebSocketServer({
    noServer: true,
    maxPayload: API_FRAME_BYTES_MAX,
    perMessageDeflate: false,
  });

  constructor(
    private readonly node: ControllerNode,
    private readonly tokens: TokenAuthority,
    private readonly log: Logger,
    private readonly metrics: ControllerMetrics | null,
    /** The bootstrap configuration: serves `login` before the first ConfigFact is applied. */
    private readonly bootstrapConfig: ClusterConfig,
    private readonly now: () => number = Date.now,
  ) {}

  /** The leader's scheduler reason for a pending job (set by the controller when it runs a hub). */
  schedulerReason: (jobId: number) => string | undefined = () => undefined;

  /** The state's pend reason, made precise by the scheduler's when the job only waits for it. */
  private pendReasonOf(job: Job): string | null {
    const r = pendReason(this.node.state, job);
    if (r !== WAITING) return r;
    if (this.node.isLeader()) return this.schedulerReason(job.id) ?? r;
    const lead = this.node.leaderId();
    return lead ? `${r} (the scheduler's reason is shown by the leader, node ${lead})` : r;
  }

  /** Who may connect, how many requests each connection has in flight, how fast: api-admission.ts. Made on first use. */
  private admissionOf: ApiAdmission | null = null;

  private get admission(): ApiAdmission {
    this.admissionOf ??= new ApiAdmission(this.log);
    return this.admissionOf;
  }

  /** Connections, paused and stalled sockets, refusals (for /healthz and the flood tests). */
  admissionStats(): ApiAdmissionStats {
    return this.admission.stats();
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const address = clientAddress(req.socket.remoteAddress);
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, address));
  }

  /** What the admission asks of the API: the token check, and the operations. */
  private readonly handler: ApiHandler = {
    authenticate: async (req) => {
      try {
        return { user: await this.user(req) };
      } catch (err) {
        return { error: this.toError(err, req.op, req.id) };
      }
    },
    serve: (req, address) => this.handleRequest(req, address),
  };

  /**
   * Frames are queued on their connection and started by the admission's scheduler, a few per
   * event-loop turn (api-admission.ts); the socket is paused while the connection has too many
   * requests in flight or too many answers unsent.
   */
  private accept(ws: WebSocket, address: string): void {
    ws.on('error', () => undefined);
    const socket: ApiSocket = {
      send: (text, done) => ws.send(text, done),
      pause: () => ws.pause(),
      resume: () => ws.resume(),
      close: (code, reason) => ws.close(code, reason),
      terminate: () => ws.terminate(),
      isOpen: () => ws.readyState === ws.OPEN,
    };
    const conn = this.admission.accept(socket, address, this.handler);
    if (conn === null) return;
    ws.on('message', (data: Buffer, isBinary: boolean) =>
      conn.receive(isBinary ? new Uint8Array(data) : data.toString('utf8'), data.length),
    );
    ws.on('close', () => conn.closedBySocket());
  }

  private config(): ClusterConfig | null {
    return this.node.state.config?.cluster ?? null;
  }

  /**
   * Handles one frame; never throws: every failure becomes an error response. `address`: the
   * client's (for the login gate's per-address limit), null when not known.
   */
  async handle(
    frame: string | Uint8Array,
    address: string | null = null,
  ): Promise<{ id: number; ok: true; result: unknown } | { id: number; ok: false; error: ApiErrorBody }> {
    let req: Request;
    try {
      req = parseRequest(frame);
    } catch (err) {
      if (err instanceof RequestError)
        return { id: err.id, ok: false, error: { code: err.code, message: err.message } };
      return { id: requestIdOf(frame), ok: false, error: this.internalError(err, '(unparsed)') };
    }
    return this.handleRequest(req, address);
  }

  /** Serves a parsed request; never throws. */
  private async handleRequest(
    req: Request,
    address: string | null,
  ): Promise<{ id: number; ok: true; result: unknown } | { id: number; ok: false; error: ApiErrorBody }> {
    this.metrics?.apiRequests.inc({ op: req.op });
    try {
      const result = await this.dispatch(req, address);
      return { id: req.id, ok: true, result };
    } catch (err) {
      return { id: req.id, ok: false, error: this.toError(err, req.op, req.id) };
    }
  }

  private toError(err: unknown, op: string, id?: number): ApiErrorBody {
    if (err instanceof ApiFailure && err.code === 'internal') return this.internalError(err, op, id);
    if (err instanceof ApiFailure) {
      if (err.code === 'rejected' || err.code === 'forbidden') this.metrics?.proposalsRejected.inc();
      if (err.retryAfter_ms !== undefined)
        return { code: err.code, message: err.message, retryAfter_ms: err.retryAfter_ms };
      return err.leader
        ? { code: err.code, message: err.message, leader: err.leader }
        : { code: err.code, message: err.message };
    }
    if (err instanceof AuthError) return { code: 'unauthenticated', message: err.message };
    if (err instanceof ProposalRejectedError) {
      // A permanent refusal of Raft (an invalid membership change, ...): the same request gets the
      // same answer, so it is `rejected`, which clients never retry.
      this.metrics?.proposalsRejected.inc();
      return { code: 'rejected', message: err.message };
    }
    if (err instanceof NodeUnavailableError) {
      const address = err.leaderId ? this.node.addressOf(err.leaderId) : null;
      return address !== null && err.code === 'not-leader'
        ? { code: 'not-leader', message: err.message, leader: { id: err.leaderId, address } }
        : { code: err.code === 'not-leader' ? 'no-leader' : err.code, message: err.message };
    }
    return this.internalError(err, op, id);
  }

  /**
   * An unexpected failure: the client gets `internal`, a generic message and a reference; the
   * details (never sent: they may hold paths, state or other users' data) go to the log with it.
   */
  private internalError(err: unknown, op: string, id?: number): ApiErrorBody {
    const reference = randomBytes(6).toString('hex');
    const e = err instanceof Error ? err : new Error(String(err));
    this.log.error('internal error serving a request', {
      op,
      requestId: id ?? null,
      reference,
      error: e.message,
      stack: e.stack,
    });
    return {
      code: 'internal',
      message: `internal error (reference ${reference}); the controller's log has the details`,
    };
  }

  private async user(req: Request): Promise<string> {
    const { user } = await this.tokens.verify(req.token);
    // A token is good only while its user is in the configuration in force: deleting a user from
    // users.yaml ends their tokens at once, not when they expire (up to TOKEN_TTL_S_MAX later).
    if (!(this.config() ?? this.bootstrapConfig).users.has(user)) {
      throw new AuthError(
        'bad-token',
        `the token's user ${user} is no longer in users.yaml: log in as an existing user`,
      );
    }
    return user;
  }

  private requireConfig(): ClusterConfig {
    const c = this.config();
    if (c === null)
      throw new ApiFailure(
        'unavailable',
        'the cluster has no configuration yet (the leader applies it at first start); retry shortly',
      );
    return c;
  }

  private check(config: ClusterConfig, user: string, permission: Permission, scope?: AuthzScope): void {
    const r = authorize(config, user, permission, scope);
    if (!r.allowed) throw new ApiFailure('forbidden', r.reason);
  }

  private allowed(config: ClusterConfig, user: string, permission: Permission, scope?: AuthzScope): boolean {
    return authorize(config, user, permission, scope).allowed;
  }

  private async read(req: Request): Promise<void> {
    if (!req.stale) await this.node.readBarrier();
  }

  /** A follower answers `not-leader` with the leader's address (or `no-leader`): it never judges a write. */
  private requireLeader(): void {
    if (this.node.isLeader()) return;
    const lead = this.node.leaderId();
    const address = lead ? this.node.addressOf(lead) : null;
    if (address !== null)
      throw new ApiFailure(
        'not-leader',
        `node ${this.node.id} is not the leader; the leader is node ${lead} at ${address}`,
        { id: lead, address },
      );
    throw new ApiFailure('no-leader', 'the cluster has no leader right now (an election is under way); retry shortly');
  }

  private async write(session: Session | undefined, body: FactBody): Promise<ApplyResult> {
    this.requireLeader();
    const fact: Fact = { clientId: session?.client ?? null, sequence: session?.seq ?? 0, timeMs: this.now(), body };
    this.metrics?.proposals.inc();
    const result = await this.node.propose(encodeFact(fact));
    if (result.kind === 'rejected') throw rejection(result.code, result.message);
    return result;
  }

  private async dispatch(req: Request, address: string | null): Promise<unknown> {
    switch (req.op) {
      case 'login':
        return this.login(req.args, address);
      case 'jobs.submit':
        return this.submit(await this.user(req), req.session, req.args);
      case 'jobs.list':
        return this.listJobs(await this.user(req), req);
      case 'jobs.show':
        return this.showJob(await this.user(req), req);
      case 'jobs.kill':
      case 'jobs.requeue':
      case 'jobs.restart':
        return this.control(
          await this.user(req),
          req.session,
          req.op.slice(5) as 'kill' | 'requeue' | 'restart',
          req.args.id,
        );
      case 'apps.list':
        return this.listApps(await this.user(req), req);
      case 'apps.show':
        return this.showApp(await this.user(req), req);
      case 'config.upgrade':
        return this.upgrade(await this.user(req), req.session, req.args);
      case 'cluster.status':
        return this.clusterStatus(await this.user(req));
      case 'cluster.transferLeader':
        return this.transferLeader(await this.user(req), req.args);
      case 'cluster.addMember':
      case 'cluster.removeMember':
        return this.membership(await this.user(req), req);
      case 'token.issue':
        return this.issueToken(await this.user(req), req.args);
      case 'roles.list':
        return this.listRoles(await this.user(req), req);
      case 'roles.set':
      case 'roles.delete':
        return this.changeRole(await this.user(req), req);
    }
  }

  // ---- operations ----

  /** Login rate limits and password checks (login-gate.ts), made on first use. */
  private loginGate: LoginGate | null = null;

  private async login(args: OpArgs<'login'>, address: string | null): Promise<unknown> {
    const config = this.config() ?? this.bootstrapConfig;
    this.loginGate ??= new LoginGate(sharedPasswordPool(), this.now);
    try {
      // Per user name, and per client address when the request came over a socket.
      await this.loginGate.check(config.users, args.user, args.password, address);
    } catch (err) {
      // Retryable: the client library waits retryAfter_ms and sends the login again.
      if (err instanceof LoginRateLimitedError)
        throw new ApiFailure('rate-limited', err.message, undefined, err.retryAfter_ms);
      throw err;
    }
    const token = await this.tokens.issue(args.user, TOKEN_TTL_S_DEFAULT);
    return { token, user: args.user, expiresIn_s: TOKEN_TTL_S_DEFAULT };
  }

  /** The job's own values as the log records them (the one converter, model/job-own-values.ts). */
  private toJobSpec(job: ApiJobSpec): JobSpec {
    try {
      return jobSpecOf(job);
    } catch (e) {
      if (e instanceof JobValueError) throw new ApiFailure('bad-request', `job.${e.field}: ${e.message}`);
      throw e;
    }
  }

  /**
   * On the leader, in this order: the session table (a retry of a write already applied gets its
   * first answer, as apply would give it), then admission (statemachine/admission.ts, the one apply
   * uses), then the proposal. A refusal is only given from state at the commit point: when the
   * local state refuses, the leader first catches up (ReadIndex) and judges again.
   */
  private async submit(user: string, session: Session | undefined, args: OpArgs<'jobs.submit'>): Promise<unknown> {
    this.requireLeader();
    const dryRun = args.dryRun === true;
    let prior = dryRun ? null : this.priorSubmit(session, user);
    if (prior !== null) return prior;
    let a = this.admit(user, args);
    if (!a.ok) {
      await this.node.readBarrier();
      prior = dryRun ? null : this.priorSubmit(session, user);
      if (prior !== null) return prior;
      a = this.admit(user, args);
      if (!a.ok) throw rejection(a.code, a.message);
    }
    if (dryRun) {
      const e = a.effective;
      return {
        dryRun: true,
        profile: e.profile,
        profileLabel: a.hash === null ? null : profileLabel(e.profile, a.hash),
        recordedAs: a.submit.profile,
        mode: e.mode,
        launchType: e.launchType,
        tasks: e.tasks,
        resreq: resreqTerms(e.resreq),
        env: e.env.map((v) => ({ name: v.value.name, value: v.value.value, origin: v.origin })),
        limits: Object.entries(e.limits).map(([k, v]) => ({
          name: limitName(k),
          value: formatLimit(k, v!.value),
          origin: v!.origin,
        })),
        profilePreExec: e.profilePreExec,
        profilePostExec: e.profilePostExec,
        jobPreExec: e.jobPreExec,
        jobPostExec: e.jobPostExec,
        queue: a.submit.queue,
      };
    }
    return this.submitAnswer(await this.write(session, a.submit));
  }

  private admit(user: string, args: OpArgs<'jobs.submit'>): Admission {
    const config = this.requireConfig();
    const spec = this.toJobSpec(args.job);
    return admitSubmit(
      config,
      user,
      submitFactFor(config, user, args.job.queue ?? DEFAULT_QUEUE, args.job.app ?? null, spec),
    );
  }

  /** The answer the state already holds for this session's request, or null when it holds none (another user's session: refused). */
  private priorSubmit(session: Session | undefined, user: string): unknown {
    if (session === undefined) return null;
    const state = this.node.state;
    const seen = peekSession(state.sessions, session.client, session.seq, Math.max(state.logTimeMs, this.now()), user);
    return seen.kind === 'new' ? null : this.submitAnswer(seen.result);
  }

  /** A submit's apply result as the client sees it: the job, its profile as recorded, its queue. */
  private submitAnswer(r: ApplyResult): unknown {
    if (r.kind === 'rejected') throw rejection(r.code, r.message);
    if (r.kind !== 'submitted') throw new ApiFailure('internal', `unexpected apply result ${r.kind} for a submit`);
    const job = this.node.state.jobs.get(r.jobId);
    return { jobId: r.jobId, profile: job?.profile ?? null, queue: job?.queue ?? null };
  }

  private canSeeJob(config: ClusterConfig, user: string, job: Job): boolean {
    return job.user === user || this.allowed(config, user, 'job:view');
  }

  /**
   * Whether `user`, who may see the job, is shown it without its profile's values: another user's
   * job whose profile the user holds no app:view on (statemachine/queries.ts `hideProfileValues`).
   * The owner always sees their own job whole: they ran it with app:use, and it runs with those
   * values anyway.
   */
  private hidesProfile(config: ClusterConfig, user: string, job: Job): boolean {
    return job.user !== user && job.profile !== null && !mayViewProfile(config, user, job.profile);
  }

  private async listJobs(user: string, req: Extract<Request, { op: 'jobs.list' }>): Promise<unknown> {
    await this.read(req);
    const config = this.requireConfig();
    const a = req.args;
    const state = this.node.state;
    const limit = a.limit ?? LIST_LIMIT_DEFAULT;
    const out: unknown[] = [];
    // A job names `--app` by its recorded profile, or (to a viewer of that profile) the one its record ran.
    const names = (j: Job, app: string, hidden: boolean): boolean =>
      j.profile === app || (!hidden && j.record?.profile === app);
    // Newest first, as `bjobs` users expect to see their latest jobs.
    const ids = [...state.jobs.keys()];
    for (let i = ids.length - 1; i >= 0 && out.length < limit; i--) {
      const j = state.jobs.get(ids[i]!)!;
      if (a.state !== undefined && j.state !== a.state) continue;
      if (a.user !== undefined && j.user !== a.user) continue;
      if (a.queue !== undefined && j.queue !== a.queue) continue;
      if (!this.canSeeJob(config, user, j)) continue;
      const hidden = this.hidesProfile(config, user, j);
      if (a.app !== undefined && !names(j, a.app, hidden)) continue;
      out.push(jobSummary(j, j.state === 'PEND' ? this.pendReasonOf(j) : null, hidden));
    }
    // `--app P` for a profile that is not defined, or that the user may not view, is refused in the
    // same words either way (a refusal must not tell which profiles exist), unless a job the user
    // may see names P: then its name is no secret (the APP column shows it) and those jobs are listed.
    if (
      out.length === 0 &&
      a.app !== undefined &&
      !(resolveProfile(config, a.app) !== null && mayViewProfile(config, user, a.app))
    ) {
      const app = a.app;
      const named = [...state.jobs.values()].some(
        (j) => this.canSeeJob(config, user, j) && names(j, app, this.hidesProfile(config, user, j)),
      );
      if (!named) throw new ApiFailure('not-found', profileNotDefinedReason(app));
    }
    return { jobs: out };
  }

  private async showJob(user: string, req: Extract<Request, { op: 'jobs.show' }>): Promise<unknown> {
    await this.read(req);
    const config = this.requireConfig();
    const job = this.node.state.jobs.get(req.args.id);
    if (job === undefined || !this.canSeeJob(config, user, job))
      throw new ApiFailure('not-found', `job ${req.args.id} does not exist`);
    const d = jobDetails(this.node.state, req.args.id);
    if (d === null) throw new ApiFailure('not-found', `job ${req.args.id} does not exist`);
    const shown = d.state !== 'PEND' ? d : { ...d, pendReason: this.pendReasonOf(job) };
    return this.hidesProfile(config, user, job) ? hideProfileValues(shown) : shown;
  }

  private async control(
    user: string,
    session: Session | undefined,
    action: 'kill' | 'requeue' | 'restart',
    id: number,
  ): Promise<unknown> {
    // A new leader may not have applied the submit yet: read at the commit point first, or a job
    // acknowledged before a failover would look missing (the drill caught this).
    await this.node.readBarrier();
    const config = this.requireConfig();
    const job = this.node.state.jobs.get(id);
    if (job === undefined || !this.canSeeJob(config, user, job))
      throw new ApiFailure('not-found', `job ${id} does not exist`);
    if (job.user !== user) this.check(config, user, 'job:control');
    if (action === 'restart' || action === 'requeue') {
      // The brief: restart re-checks app:use for the job's profile (and queue:submit), as a new submit would.
      const r = job.profile === null ? null : resolveProfile(config, job.profile);
      if (job.profile !== null && r === null) throw new ApiFailure('rejected', profileNotDefinedReason(job.profile));
      this.check(config, user, 'queue:submit', { type: 'queue', value: job.queue });
      if (r !== null && !this.allowed(config, user, 'app:use', { type: 'app', value: r.profile.name })) {
        // As at submit (admission.ts): a profile the user may neither use nor view is answered as not defined.
        if (job.profile !== null && !mayViewProfile(config, user, job.profile))
          throw new ApiFailure('rejected', profileNotDefinedReason(job.profile));
        this.check(config, user, 'app:use', { type: 'app', value: r.profile.name });
      }
    }
    await this.write(session, { kind: 'control', jobId: id, action, user });
    return { jobId: id, action };
  }

  private profileSummary(p: Profile, config: ClusterConfig): Record<string, unknown> {
    return {
      name: p.name,
      label: profileLabel(p.name, profileHash(p)),
      description: p.description,
      aliases: p.aliases,
      mode: p.mode,
      launchType: p.launchType ?? 'serial',
      isDefault: config.cluster.defaultApplication === p.name,
    };
  }

  private async listApps(user: string, req: Extract<Request, { op: 'apps.list' }>): Promise<unknown> {
    await this.read(req);
    const config = this.requireConfig();
    const apps = [...config.profiles.values()]
      .filter((p) => this.allowed(config, user, 'app:view', { type: 'app', value: p.name }))
      .map((p) => ({
        ...this.profileSummary(p, config),
        usable: this.allowed(config, user, 'app:use', { type: 'app', value: p.name }),
      }));
    // Only profiles the user may view are listed; the default is named only when it is one of them.
    const def = config.cluster.defaultApplication;
    return { apps, defaultApplication: mayViewProfile(config, user, def) ? def : null };
  }

  private async showApp(user: string, req: Extract<Request, { op: 'apps.show' }>): Promise<unknown> {
    await this.read(req);
    const config = this.requireConfig();
    const r = resolveProfile(config, req.args.name);
    // A profile the user may not view is answered as one that does not exist, by the name asked
    // for: the answer tells neither whether it exists nor, for an alias, its target.
    if (r === null || !mayViewProfile(config, user, req.args.name))
      throw new ApiFailure('not-found', profileNotDefinedReason(req.args.name));
    const p = r.profile;
    return {
      ...this.profileSummary(p, config),
      recordedAs: r.recordedAs,
      hash: profileHash(p),
      resreq:
        p.resreq === null
          ? []
          : resreqTerms({
              select: p.resreq.select.map((value) => ({ value, origin: 'profile' as const })),
              rusage: p.resreq.rusage.map((value) => ({ value, origin: 'profile' as const })),
              span: p.resreq.span === null ? null : { value: p.resreq.span, origin: 'profile' },
              same: p.resreq.same === null ? null : { value: p.resreq.same, origin: 'profile' },
              order: p.resreq.order === null ? null : { value: p.resreq.order, origin: 'profile' },
            }).map((t) => t.text),
      tasks: p.tasks,
      limits: Object.entries(p.limits).map(([k, v]) => ({ name: limitName(k), max: formatLimit(k, v as number) })),
      env: p.env,
      preExec: p.preExec,
      postExec: p.postExec,
      jobPrePostExec: p.jobPrePostExec,
      usable: this.allowed(config, user, 'app:use', { type: 'app', value: p.name }),
    };
  }

  private async upgrade(user: string, session: Session | undefined, args: OpArgs<'config.upgrade'>): Promise<unknown> {
    await this.node.readBarrier();
    const config = this.requireConfig();
    this.check(config, user, 'cluster:admin');
    const loaded = loadConfig(args.files);
    if (!loaded.ok) {
      const lines = loaded.errors.map(
        (d) =>
          `${d.file}${d.line ? `:${d.line}:${d.column ?? 0}` : ''}${d.entry ? ` ${d.entry}` : ''}${d.field ? ` ${d.field}` : ''}: ${d.message}`,
      );
      throw new ApiFailure('rejected', `the configuration is invalid; nothing changed:\n${lines.join('\n')}`);
    }
    // A configuration that drops a current member's address would cut the cluster in pieces.
    const conf = this.node.status().conf;
    const ids = new Set(loaded.config.cluster.controllers.map((c) => c.id));
    const missing = [...conf.voters, ...conf.learners].filter((id) => !ids.has(id));
    if (missing.length > 0) {
      throw new ApiFailure(
        'rejected',
        `xce.yaml controllers must list every current member; missing: ${missing.join(', ')} (remove a member with \`xceadmin cluster remove-member\` first)`,
      );
    }
    const r = await this.write(session, { kind: 'config', files: args.files, user });
    if (r.kind !== 'configApplied')
      throw new ApiFailure('internal', `unexpected apply result ${r.kind} for a config upgrade`);
    return { applied: true, inUse: r.inUse, warnings: r.warnings };
  }

  private clusterStatus(user: string): unknown {
    const config = this.config() ?? this.bootstrapConfig;
    if (!this.allowed(config, user, 'cluster:view')) this.check(config, user, 'cluster:admin');
    const s = this.node.status();
    const prs = this.node.matchIndexes();
    const members = [
      ...s.conf.voters.map((id) => ({ id, role: 'voter' })),
      ...s.conf.learners.map((id) => ({ id, role: 'learner' })),
    ].map((m) => ({
      ...m,
      address: this.node.addressOf(m.id),
      leader: m.id === s.lead,
      match: prs.get(m.id) ?? null,
      lag: prs.has(m.id) ? s.lastIndex - (prs.get(m.id) ?? 0) : null,
      connected: m.id === this.node.id ? true : this.node.transport.connected(m.id),
    }));
    return {
      node: this.node.id,
      leader: s.lead,
      leaderAddress: s.lead ? this.node.addressOf(s.lead) : null,
      term: s.term,
      commit: s.commit,
      applied: s.appliedIndex,
      lastIndex: s.lastIndex,
      snapshotIndex: s.snapshotIndex,
      members,
      jobs: countJobs(this.node.state),
    };
  }

  private async transferLeader(user: string, args: OpArgs<'cluster.transferLeader'>): Promise<unknown> {
    this.check(this.requireConfig(), user, 'cluster:admin');
    if (!this.node.isLeader()) return this.write(undefined, { kind: 'noop' }); // answers not-leader with the address
    const s = this.node.status();
    const to = args.to ?? s.conf.voters.find((id) => id !== this.node.id && this.node.transport.connected(id));
    if (to === undefined) throw new ApiFailure('rejected', 'no other voter is connected to take over leadership');
    if (!s.conf.voters.includes(to))
      throw new ApiFailure(
        'rejected',
        `node ${to} is not a voter of this cluster (voters: ${s.conf.voters.join(', ')})`,
      );
    this.node.transferLeader(to);
    const until = this.now() + 3_000;
    while (this.node.isLeader() && this.now() < until) await new Promise((r) => setTimeout(r, 10));
    return { transferred: !this.node.isLeader(), to, leader: this.node.leaderId() };
  }

  private async membership(
    user: string,
    req: Extract<Request, { op: 'cluster.addMember' | 'cluster.removeMember' }>,
  ): Promise<unknown> {
    const config = this.requireConfig();
    this.check(config, user, 'cluster:admin');
    if (!this.node.isLeader()) return this.write(undefined, { kind: 'noop' });
    const id = req.args.id;
    if (req.op === 'cluster.addMember') {
      const listed = config.cluster.controllers.find((c) => c.id === id);
      if (listed === undefined)
        throw new ApiFailure(
          'rejected',
          `node ${id} is not in xce.yaml controllers; add its address there with \`xceadmin config upgrade\` first`,
        );
      if (`${listed.host}:${listed.port}` !== req.args.address) {
        throw new ApiFailure(
          'rejected',
          `node ${id} is listed in xce.yaml at ${listed.host}:${listed.port}, not ${req.args.address}`,
        );
      }
      await this.node.proposeConfChange({
        type: req.args.learner ? ConfChangeType.AddLearner : ConfChangeType.AddVoter,
        nodeId: id,
      });
    } else {
      await this.node.proposeConfChange({ type: ConfChangeType.RemoveNode, nodeId: id });
    }
    const s = this.node.status();
    return { voters: s.conf.voters, learners: s.conf.learners };
  }

  private async issueToken(user: string, args: OpArgs<'token.issue'>): Promise<unknown> {
    const config = this.requireConfig();
    this.check(config, user, 'cluster:admin');
    if (!config.users.has(args.user)) throw new ApiFailure('rejected', `user ${args.user} is not in users.yaml`);
    const ttl = args.ttl_s ?? TOKEN_TTL_S_DEFAULT;
    if (ttl > TOKEN_TTL_S_MAX)
      throw new ApiFailure(
        'bad-request',
        `ttl_s ${ttl} is longer than the maximum token lifetime, ${TOKEN_TTL_S_MAX} s (${formatDuration(TOKEN_TTL_S_MAX)})`,
      );
    return { token: await this.tokens.issue(args.user, ttl), user: args.user, expiresIn_s: ttl };
  }

  private async listRoles(user: string, req: Extract<Request, { op: 'roles.list' }>): Promise<unknown> {
    await this.read(req);
    const config = this.requireConfig();
    this.check(config, user, 'cluster:admin');
    return {
      roles: [...config.rbac.roles.values()].map((r) => ({
        name: r.name,
        description: r.description,
        grants: r.grants,
      })),
      bindings: config.rbac.bindings,
    };
  }

  /**
   * The role API: creates, replaces or deletes a role by editing rbac.yaml of the CURRENT
   * configuration and proposing it as a whole (validated like any upgrade, replicated through
   * Raft, so API-made grants persist). Scope types are `queue`, `app` (profile names or all), `all`.
   */
  private async changeRole(
    user: string,
    req: Extract<Request, { op: 'roles.set' | 'roles.delete' }>,
  ): Promise<unknown> {
    await this.node.readBarrier(); // edit the newest committed rbac.yaml, not a stale one
    const current = this.node.state.config;
    if (current === null) throw new ApiFailure('unavailable', 'the cluster has no configuration yet; retry shortly');
    this.check(current.cluster, user, 'cluster:admin');
    const files = current.files.map((f) => ({ path: f.path, text: f.text }));
    const rbac = files.find((f) => baseName(f.path) === 'rbac.yaml');
    if (rbac === undefined) throw new ApiFailure('rejected', 'the configuration has no rbac.yaml to change');
    const doc = parseDocument(rbac.text);
    const roles = doc.get('roles');
    if (!isSeq(roles)) throw new ApiFailure('rejected', 'rbac.yaml has no roles list');
    const index = roles.items.findIndex((it) => isMap(it) && it.get('name') === req.args.name);
    if (req.op === 'roles.delete') {
      if (index < 0) throw new ApiFailure('not-found', `role ${req.args.name} is not defined`);
      roles.items.splice(index, 1);
    } else {
      const role: Record<string, unknown> = { name: req.args.name };
      if (req.args.description !== undefined) role['description'] = req.args.description;
      role['permissions'] = req.args.permissions.map((p) => ({
        name: p.name,
        ...(p.type !== undefined ? { type: p.type } : {}),
        ...(p.values !== undefined ? { values: p.values } : {}),
      }));
      const node = doc.createNode(role);
      if (index >= 0) roles.items[index] = node;
      else roles.items.push(node);
    }
    rbac.text = doc.toString();
    const loaded = loadConfig(files);
    if (!loaded.ok) {
      throw new ApiFailure(
        'rejected',
        `the role is not valid; nothing changed:\n${loaded.errors.map((d) => `${d.file}${d.entry ? ` ${d.entry}` : ''}${d.field ? ` ${d.field}` : ''}: ${d.message}`).join('\n')}`,
      );
    }
    const r = await this.write(req.session, { kind: 'config', files, user });
    if (r.kind !== 'configApplied') throw new ApiFailure('internal', `unexpected apply result ${r.kind}`);
    return { role: req.args.name, action: req.op === 'roles.set' ? (index >= 0 ? 'replaced' : 'created') : 'deleted' };
  }

  close(): void {
    for (const c of this.wss.clients) c.terminate();
    this.wss.close();
  }
}

/** An apply (or admission) refusal as the client sees it. */
function rejection(code: RejectCode, message: string): ApiFailure {
  return new ApiFailure(
    code === 'not_authorized' ? 'forbidden' : code === 'job_not_found' ? 'not-found' : 'rejected',
    message,
  );
}

/** `runtime_s` → `runtime`: the names users write in `--limit` and profiles. */
function limitName(key: string): string {
  return key.replace(/_(s|bytes)$/, '');
}

function formatLimit(key: string, value: number): string {
  return key === 'memory_bytes' ? formatSize(value) : key === 'tasks' ? String(value) : formatDuration(value);
}

export function countJobs(state: ControllerState): Record<string, number> {
  const out: Record<string, number> = { PEND: 0, RUN: 0, DONE: 0, EXIT: 0 };
  for (const j of state.jobs.values()) out[j.state] = (out[j.state] ?? 0) + 1;
  return out;
}

/** pendReason's text for a job that merges fine and only waits for a scheduling pass. */
const WAITING = 'waiting for the scheduler';

/** A job as `jobs list` shows it; `hidden`: the viewer may not see its profile (no app:view): the recorded name, no pend reason. */
function jobSummary(j: Job, pend: string | null, hidden: boolean): Record<string, unknown> {
  return {
    id: j.id,
    state: j.state,
    user: j.user,
    queue: j.queue,
    app: hidden ? j.profile : (j.record?.profile ?? j.profile),
    name: j.spec.jobName,
    command: j.spec.command.join(' '),
    hosts: j.record?.hosts.map((h) => `${h.host}:${h.tasks}`).join(',') ?? '',
    submitTimeMs: j.submitTimeMs,
    pendReason: hidden && pend !== null && j.profile !== null ? `(${profileHiddenNote(j.profile)})` : pend,
    exitCode: j.state === 'DONE' || j.state === 'EXIT' ? j.exitCode : null,
    reason: j.reason,
  };
}
