// The worker daemon's connection to the controllers (`/worker`, protocol in ../worker-protocol.ts).
//
// - Dials any controller; a follower answers `not-leader` with the leader's address and the agent
//   dials it (at most REDIRECTS_MAX hops in a row); with no leader known it tries the next
//   controller after a back-off (doubling, bounded, jittered by an injected random).
// - A leader that refuses the registration (`refused`: hosts.yaml does not list this host, say)
//   has its reason logged (a warning the first time, then again when it changes or once every
//   REFUSED_WARN_EVERY_MS), and the agent retries after its longest back-off: the host may be
//   added by a configuration upgrade while it waits.
// - After each (re)connect it sends `register` with its resources and every run it has, then,
//   once `registered`, heartbeats (a frame and a WebSocket ping every `heartbeat_ms`; no answer for
//   HEARTBEAT_MISSES_MAX periods drops the connection) and sends every un-acked status.
// - `start` is idempotent: a (jobId, run) running or run here already is acked `duplicate`.
// - Every status is kept (and saved in the state file) until a `status-ack` names it, and re-sent
//   on each reconnect and every `statusResend_ms`, so a controller failover loses none.
// - A restarted worker adopts a job whose process is still there (it cannot learn its exit code:
//   not its child any more) and reports what became of the others (state-file.ts).
// - stop(): refuses new jobs, kills the running ones (their post-execs run, bounded), reports them
//   finished with their signal, waits a bounded time for the acks, saves what is left, closes.
// This file puts the worker together: the connection (leader-link.ts), the statuses until acked
// (status-queue.ts), the runs across a restart (run-book.ts) and the executor (executor.ts).

import type { Logger } from '../log.js';
import type { KillFrame, PeekFrame, Resources, RunningJob, SignalFrame, StatusFrame } from '../worker-protocol.js';
import { PeekError, readPiece } from './peek.js';
import { Executor, type ExecutorOptions, type JobEvent, type StartOutcome } from './executor.js';
import type { Progress } from './job-run.js';
import { LeaderLink, type Reply, type UnreadableStart } from './leader-link.js';
import { RunBook } from './run-book.js';
import { cutReason, PENDING_STATUSES_MAX, StatusQueue, statusFrameOf } from './status-queue.js';
import type { DialTls } from '../handshake.js';
import type { HostCredential } from '../keys.js';

export {
  RECONNECT_MS_MIN_DEFAULT,
  RECONNECT_MS_MAX_DEFAULT,
  REGISTER_TIMEOUT_MS_DEFAULT,
  HANDSHAKE_TIMEOUT_MS,
  HEARTBEAT_MISSES_MAX,
  REDIRECTS_MAX,
  REFUSED_WARN_EVERY_MS,
} from './leader-link.js';
export { STATUS_RESEND_MS_DEFAULT, STATUS_SEND_BATCH_MAX, PENDING_STATUSES_MAX } from './status-queue.js';
export { ADOPTED_POLL_MS, EXIT_UNKNOWN_REASON } from './run-book.js';

export const SHUTDOWN_FORCE_MS_DEFAULT = 10_000;
export const SHUTDOWN_FLUSH_MS_DEFAULT = 3_000;

export interface AgentOptions extends ExecutorOptions {
  readonly controllers: readonly string[];
  readonly resources: Resources;
  readonly version: string;
  /** This host's credential (`xceadmin host enroll`); null: no handshake (a stand-in controller in tests). */
  readonly credential: HostCredential | null;
  /** Dial the controllers over TLS with this CA; null: plain ws (insecure_dev). */
  readonly tls: DialTls | null;
  /** Where the state file lives; null: remember nothing across a restart (tests). */
  readonly stateDir: string | null;
  readonly random: () => number;
  readonly reconnectMin_ms?: number;
  readonly reconnectMax_ms?: number;
  readonly statusResend_ms?: number;
  readonly registerTimeout_ms?: number;
  readonly shutdownForce_ms?: number;
  readonly shutdownFlush_ms?: number;
}

export class WorkerAgent {
  readonly executor: Executor;
  private readonly log: Logger;
  private readonly link: LeaderLink;
  private readonly statuses: StatusQueue;
  private readonly book: RunBook;

  constructor(private readonly opts: AgentOptions) {
    if (opts.controllers.length === 0)
      throw new Error('no controller address given (use --controllers, XCE_CONTROLLERS or the config file)');
    this.log = opts.log.child({ host: opts.host });
    this.link = new LeaderLink(opts, this.log, {
      running: () => this.running(),
      onRegistered: (url, leaderId, sessionResumed) => this.onRegistered(url, leaderId, sessionResumed),
      onStart: (reply, info) => this.answerStart(reply, info.jobId, info.run, () => this.executor.start(info)),
      onUnreadableStart: (reply, url, start, error) => this.onUnreadableStart(reply, url, start, error),
      onKill: (reply, frame) => this.onKill(reply, frame),
      onSignal: (reply, frame) => this.onSignal(reply, frame),
      onStatusAck: (statusId) => this.statuses.ack(statusId),
      onPeek: (reply, frame) => void this.onPeek(reply, frame),
    });
    this.statuses = new StatusQueue(opts, {
      save: () =>
        this.book.saveAsync(
          () => this.statuses.unacked(),
          () => this.executor.recentJson(),
        ),
      sender: () => this.link.registeredSender(),
    });
    this.book = new RunBook(opts, this.log, (e) => this.onJobEvent(e));
    this.executor = new Executor(
      opts,
      (e) => this.onJobEvent(e),
      (k, p, info) => this.onProgress(k, p, info),
    );
    this.restore();
  }

  // ---- lifecycle ----

  start(): void {
    this.link.connect();
    this.statuses.start();
    this.book.start();
  }

  /** Graceful stop: no new jobs, running ones killed and reported, a bounded wait for acks, state saved. */
  async stop(reason = `xcecd on host ${this.opts.host} is shutting down`): Promise<void> {
    await this.executor.shutdown(reason, this.opts.shutdownForce_ms ?? SHUTDOWN_FORCE_MS_DEFAULT);
    this.book.killAll(reason);
    await this.statuses.waitForAcks(this.opts.shutdownFlush_ms ?? SHUTDOWN_FLUSH_MS_DEFAULT);
    this.close();
  }

  /** Stops at once (tests, fatal errors): no job is killed, nothing more is sent; the state stays saved. */
  close(): void {
    this.link.close();
    this.statuses.close();
    this.book.close();
    this.save();
  }

  /** Statuses not yet acknowledged, oldest first. */
  unacked(): StatusFrame[] {
    return this.statuses.unacked();
  }

  isRegistered(): boolean {
    return this.link.isRegistered();
  }

  /** The leader this worker is registered with, for logs and tests. */
  get leaderId(): number | null {
    return this.link.leaderId;
  }

  /** Registrations the leader refused since the last one it accepted. */
  get refusals(): number {
    return this.link.refusals;
  }

  running(): RunningJob[] {
    return [...this.executor.running(), ...this.book.adoptedRunning()];
  }

  // ---- the frames about jobs (leader-link.ts hands them over) ----

  private onRegistered(url: string, leaderId: number, sessionResumed: boolean): void {
    this.log.info('registered with the leader', {
      url,
      leader: leaderId,
      // Over TLS: whether this dial resumed a session a controller gave (daemon/tls-resumption.ts).
      tlsResumed: sessionResumed,
      running: this.executor.size + this.book.adoptedCount,
      unacked: this.statuses.size,
    });
    this.statuses.onRegistered();
  }

  /** A start this worker cannot read still gets an answer: a launch error for its job. */
  private onUnreadableStart(reply: Reply, url: string, start: UnreadableStart, error: Error): void {
    const reason = `host ${this.opts.host} cannot run this start of the job: ${start.problem}`;
    this.log.warn('refusing a start frame the worker cannot read', {
      url,
      jobId: start.jobId,
      run: start.run,
      error: error.message,
    });
    this.answerStart(reply, start.jobId, start.run, () =>
      this.executor.refuseStart(start.jobId, start.run, cutReason(reason)),
    );
  }

  private onKill(reply: Reply, frame: KillFrame): void {
    const found =
      this.book.killAdopted(frame.jobId, frame.run, frame.reason) ||
      this.executor.kill(frame.jobId, frame.run, frame.reason);
    this.log.info('kill', { jobId: frame.jobId, run: frame.run, found });
    reply({ type: 'ack', ref: 'kill', jobId: frame.jobId, run: frame.run, outcome: found ? 'accepted' : 'unknown' });
  }

  /** `jobs suspend` / `jobs resume`: SIGSTOP / SIGCONT to the run's process group (a status follows). */
  private onSignal(reply: Reply, frame: SignalFrame): void {
    const found = this.executor.signal(frame.jobId, frame.run, frame.action);
    this.log.info(frame.action, { jobId: frame.jobId, run: frame.run, found });
    reply({ type: 'ack', ref: 'signal', jobId: frame.jobId, run: frame.run, outcome: found ? 'accepted' : 'unknown' });
  }

  /** A piece of a running job's stdout for the leader (`xcecli jobs peek`); never throws. */
  private async onPeek(reply: Reply, f: PeekFrame): Promise<void> {
    const base = {
      type: 'peek-data',
      host: this.opts.host,
      requestId: f.requestId,
      jobId: f.jobId,
      run: f.run,
    } as const;
    const out = this.executor.outputOf(f.jobId, f.run);
    if (out === null) {
      reply({ ...base, outcome: 'unknown', reason: `job ${f.jobId} is not running on host ${this.opts.host}` });
      return;
    }
    try {
      const p = await readPiece(out.file, out.uid, f.offset ?? null, f.maxBytes);
      reply({
        ...base,
        outcome: 'ok',
        path: out.file,
        offset: p.offset,
        size: p.size,
        data: p.data.toString('base64'),
      });
    } catch (e) {
      const reason = e instanceof PeekError ? e.message : `cannot read the stdout file: ${(e as Error).message}`;
      reply({ ...base, outcome: 'error', path: out.file, reason: cutReason(reason) });
    }
  }

  /** Runs `start` for a (jobId, run) not run here yet, when statuses can still be kept; acks the outcome. */
  private answerStart(reply: Reply, jobId: number, run: number, start: () => StartOutcome): void {
    const r: StartOutcome =
      this.book.isAdopted(jobId, run) || this.executor.knows(jobId, run)
        ? { outcome: 'duplicate' }
        : this.statuses.size >= PENDING_STATUSES_MAX
          ? {
              outcome: 'refused',
              reason: `host ${this.opts.host} holds ${this.statuses.size} statuses no leader has acknowledged`,
            }
          : start();
    this.log.info('start', { jobId, run, outcome: r.outcome });
    reply({
      type: 'ack',
      ref: 'start',
      jobId,
      run,
      outcome: r.outcome,
      ...(r.outcome === 'refused' ? { reason: cutReason(r.reason) } : {}),
    });
  }

  // ---- job events, progress, the state file ----

  private onJobEvent(e: JobEvent): void {
    const frame = statusFrameOf(this.opts.host, e);
    this.log.info(`job ${e.kind}`, {
      jobId: e.jobId,
      run: e.run,
      ...(e.kind === 'started'
        ? { pid: e.pid }
        : e.kind === 'suspended' || e.kind === 'resumed'
          ? {}
          : { exitCode: frame.exitCode, signal: frame.signal, reason: frame.reason }),
    });
    this.statuses.queue(frame);
  }

  private onProgress(key: string, p: Progress | null, info: { jobId: number; run: number } | null): void {
    this.book.onProgress(key, p, info);
    this.statuses.scheduleSave();
  }

  private save(): void {
    this.book.save(
      () => this.statuses.unacked(),
      () => this.executor.recentJson(),
    );
  }

  private restore(): void {
    const s = this.book.load();
    if (s === null) return;
    this.executor.remember(s.recent);
    this.statuses.restore(s.statuses);
    this.book.restoreRuns(s.runs, (k) => this.executor.remember([k]));
    this.save();
  }
}
