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

import WebSocket from 'ws';
import type { Logger } from '../log.js';
import {
  type ControllerToWorkerFrame,
  encodeFrame,
  parseControllerFrame,
  type Resources,
  type RunningJob,
  type StatusFrame,
  statusIdOf,
  toWorkerUrl,
  WORKER_FRAME_BYTES_MAX,
  WORKER_HEADER_AUTH,
  WORKER_HEADER_HOST,
  type WorkerToControllerFrame,
  workerToken,
  REASON_BYTES_MAX,
  unreadableStart,
} from '../worker-protocol.js';
import { setLongTimeout } from '../long-timer.js';
import { Executor, type ExecutorOptions, type JobEvent, runKey, type StartOutcome } from './executor.js';
import type { Progress } from './job-run.js';
import { processAlive, signalGroup } from './proc.js';
import { type SavedRun, StateFile } from './state-file.js';

export const RECONNECT_MS_MIN_DEFAULT = 100;
export const RECONNECT_MS_MAX_DEFAULT = 5_000;
export const STATUS_RESEND_MS_DEFAULT = 2_000;
/** A connection that has not been answered `registered` or `not-leader` by then is dropped. */
export const REGISTER_TIMEOUT_MS_DEFAULT = 5_000;
export const HANDSHAKE_TIMEOUT_MS = 3_000;
/** Heartbeat periods without any frame or pong from the controller before the connection is dropped. */
export const HEARTBEAT_MISSES_MAX = 3;
/** `not-leader` hops followed in a row before backing off (the cluster is electing). */
export const REDIRECTS_MAX = 4;
/** Statuses sent per resend round (the rest go in the next round). */
export const STATUS_SEND_BATCH_MAX = 1_000;
/** How often adopted jobs (from before a worker restart) are checked for having ended. */
export const ADOPTED_POLL_MS = 1_000;
/**
 * Statuses kept while no leader acknowledges them. At this bound new starts are refused (the ack
 * says why, and no status is added for them), so a worker cut off from every leader does not grow
 * without limit.
 */
export const PENDING_STATUSES_MAX = 65_536;
export const SHUTDOWN_FORCE_MS_DEFAULT = 10_000;
export const SHUTDOWN_FLUSH_MS_DEFAULT = 3_000;
/** A registration refused for the same reason again is logged as a warning at most this often. */
export const REFUSED_WARN_EVERY_MS = 60_000;

export const EXIT_UNKNOWN_REASON = 'exit status unknown: xcecd restarted while the job ran (post-execs not run)';

export interface AgentOptions extends ExecutorOptions {
  readonly controllers: readonly string[];
  readonly resources: Resources;
  readonly version: string;
  /** The cluster secret; null: connect without the auth header (a dev cluster without a secret). */
  readonly secret: Uint8Array | null;
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

interface PendingStatus {
  frame: StatusFrame;
  /** When it was last written to a registered connection; 0: not yet on this connection; -1: not yet saved. */
  sentAt: number;
}

interface Adopted {
  readonly saved: SavedRun;
  killReason: string | null;
}

export class WorkerAgent {
  readonly executor: Executor;
  private readonly urls: string[];
  private readonly log: Logger;
  private readonly state: StateFile | null;
  private readonly pending = new Map<string, PendingStatus>();
  private readonly progress = new Map<string, SavedRun>();
  private readonly adopted = new Map<string, Adopted>();
  private ws: WebSocket | null = null;
  private registered = false;
  private next = 0;
  private redirectTo: string | null = null;
  private redirects = 0;
  private backoff_ms: number;
  private heartbeatSeq = 0;
  /** Pings sent since the controller was last heard from (a frame or a pong). */
  private unanswered = 0;
  private saveScheduled = false;
  private heartbeat_ms = 0;
  private timers: {
    heartbeat?: NodeJS.Timeout;
    register?: NodeJS.Timeout;
    reconnect?: NodeJS.Timeout;
    resend?: NodeJS.Timeout;
    adopted?: NodeJS.Timeout;
  } = {};
  private stopped = false;
  private ackWaiters: Array<() => void> = [];
  /** The reason the last connection's registration was refused (until the next connection). */
  private refusedReason: string | null = null;
  /** The refusal last logged as a warning, and when. */
  private refusedWarned: { reason: string; at: number } | null = null;
  /** The leader this worker is registered with, for logs and tests. */
  leaderId: number | null = null;
  /** Registrations the leader refused since the last one it accepted. */
  refusals = 0;

  constructor(private readonly opts: AgentOptions) {
    if (opts.controllers.length === 0)
      throw new Error('no controller address given (use --controllers, XCE_CONTROLLERS or the config file)');
    this.urls = opts.controllers.map(toWorkerUrl);
    this.log = opts.log.child({ host: opts.host });
    this.backoff_ms = opts.reconnectMin_ms ?? RECONNECT_MS_MIN_DEFAULT;
    this.state = opts.stateDir === null ? null : new StateFile(opts.stateDir);
    this.executor = new Executor(
      opts,
      (e) => this.onJobEvent(e),
      (k, p, info) => this.onProgress(k, p, info),
    );
    this.restore();
  }

  // ---- lifecycle ----

  start(): void {
    this.connect();
    this.timers.resend = setInterval(
      () => this.flushStatuses(false),
      this.opts.statusResend_ms ?? STATUS_RESEND_MS_DEFAULT,
    );
    if (this.adopted.size > 0) this.timers.adopted = setInterval(() => this.pollAdopted(), ADOPTED_POLL_MS);
  }

  /** Graceful stop: no new jobs, running ones killed and reported, a bounded wait for acks, state saved. */
  async stop(reason = `xcecd on host ${this.opts.host} is shutting down`): Promise<void> {
    await this.executor.shutdown(reason, this.opts.shutdownForce_ms ?? SHUTDOWN_FORCE_MS_DEFAULT);
    for (const a of this.adopted.values()) this.killAdopted(a, reason);
    await this.waitForAcks(this.opts.shutdownFlush_ms ?? SHUTDOWN_FLUSH_MS_DEFAULT);
    this.close();
  }

  /** Stops at once (tests, fatal errors): no job is killed, nothing more is sent; the state stays saved. */
  close(): void {
    this.stopped = true;
    for (const t of Object.values(this.timers)) {
      clearTimeout(t);
      clearInterval(t);
    }
    this.timers = {};
    this.ws?.terminate();
    this.ws = null;
    this.save();
  }

  /** Statuses not yet acknowledged, oldest first. */
  unacked(): StatusFrame[] {
    return [...this.pending.values()].map((p) => p.frame);
  }

  isRegistered(): boolean {
    return this.registered;
  }

  running(): RunningJob[] {
    const out = this.executor.running();
    for (const a of this.adopted.values()) {
      const s = a.saved;
      out.push({
        jobId: s.jobId,
        run: s.run,
        ...(s.pid !== null ? { pid: s.pid } : {}),
        ...(s.startedAt !== null ? { startedAt: s.startedAt } : {}),
      });
    }
    return out;
  }

  // ---- the connection ----

  private connect(): void {
    if (this.stopped) return;
    const url = this.redirectTo ?? (this.urls[this.next % this.urls.length] as string);
    this.redirectTo = null;
    const headers: Record<string, string> = { [WORKER_HEADER_HOST]: this.opts.host };
    if (this.opts.secret !== null) headers[WORKER_HEADER_AUTH] = workerToken(this.opts.secret, this.opts.host);
    const ws = new WebSocket(url, {
      headers,
      maxPayload: WORKER_FRAME_BYTES_MAX,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
    });
    this.ws = ws;
    this.log.debug('connecting', { url });
    ws.on('open', () => {
      this.unanswered = 0;
      this.send(ws, {
        type: 'register',
        host: this.opts.host,
        resources: this.opts.resources,
        version: this.opts.version,
        running: this.running(),
      });
      this.timers.register = setTimeout(() => {
        if (!this.registered) {
          this.log.warn('no answer to register; trying another controller', { url });
          ws.terminate();
        }
      }, this.opts.registerTimeout_ms ?? REGISTER_TIMEOUT_MS_DEFAULT);
    });
    ws.on('message', (data, isBinary) => {
      if (ws !== this.ws) return;
      this.unanswered = 0;
      let frame: ControllerToWorkerFrame;
      const text = isBinary ? (data as Buffer) : data.toString();
      try {
        frame = parseControllerFrame(text);
      } catch (err) {
        // A start this worker cannot take still gets an answer: a launch error for its job.
        const start = unreadableStart(text);
        if (start !== null && this.registered) {
          const reason = `host ${this.opts.host} cannot run this start of the job: ${start.problem}`;
          this.log.warn('refusing a start frame the worker cannot read', {
            url,
            jobId: start.jobId,
            run: start.run,
            error: (err as Error).message,
          });
          this.answerStart(ws, start.jobId, start.run, () =>
            this.executor.refuseStart(start.jobId, start.run, cut(reason)),
          );
          return;
        }
        this.log.warn('dropping a bad frame from the controller', { url, error: (err as Error).message });
        return;
      }
      this.onFrame(ws, url, frame);
    });
    ws.on('pong', () => {
      if (ws === this.ws) this.unanswered = 0;
    });
    ws.on('error', (err) => this.log.debug('connection error', { url, error: err.message }));
    ws.on('close', (code, reason) => this.onClosed(ws, url, code, reason.toString('utf8')));
  }

  private onFrame(ws: WebSocket, url: string, frame: ControllerToWorkerFrame): void {
    switch (frame.type) {
      case 'registered':
        this.onRegistered(ws, url, frame.leaderId, frame.heartbeat_ms);
        return;
      case 'not-leader':
        if (frame.leader !== undefined && this.redirects < REDIRECTS_MAX) {
          this.redirects++;
          this.redirectTo = toWorkerUrl(frame.leader.address);
          this.log.info('following the leader', { from: url, leader: frame.leader.id, to: this.redirectTo });
        } else {
          this.log.info('controller knows no leader; backing off', { url });
        }
        ws.close();
        return;
      case 'refused':
        if (!this.registered) this.onRefused(url, frame.reason);
        ws.close();
        return;
      case 'start': {
        if (!this.registered) return this.log.warn('start before registered: ignored', { url });
        const info = frame.startInfo;
        this.answerStart(ws, info.jobId, info.run, () => this.executor.start(info));
        return;
      }
      case 'kill': {
        if (!this.registered) return;
        const a = this.adopted.get(runKey(frame.jobId, frame.run));
        const found =
          a !== undefined
            ? (this.killAdopted(a, frame.reason), true)
            : this.executor.kill(frame.jobId, frame.run, frame.reason);
        this.log.info('kill', { jobId: frame.jobId, run: frame.run, found });
        this.send(ws, {
          type: 'ack',
          ref: 'kill',
          jobId: frame.jobId,
          run: frame.run,
          outcome: found ? 'accepted' : 'unknown',
        });
        return;
      }
      case 'status-ack':
        if (this.pending.delete(frame.statusId)) {
          this.scheduleSave();
          if (this.pending.size === 0) for (const w of this.ackWaiters.splice(0)) w();
        }
        return;
    }
  }

  /** Runs `start` for a (jobId, run) not run here yet, when statuses can still be kept; acks the outcome. */
  private answerStart(ws: WebSocket, jobId: number, run: number, start: () => StartOutcome): void {
    const r: StartOutcome =
      this.adopted.has(runKey(jobId, run)) || this.executor.knows(jobId, run)
        ? { outcome: 'duplicate' }
        : this.pending.size >= PENDING_STATUSES_MAX
          ? {
              outcome: 'refused',
              reason: `host ${this.opts.host} holds ${this.pending.size} statuses no leader has acknowledged`,
            }
          : start();
    this.log.info('start', { jobId, run, outcome: r.outcome });
    this.send(ws, {
      type: 'ack',
      ref: 'start',
      jobId,
      run,
      outcome: r.outcome,
      ...(r.outcome === 'refused' ? { reason: cut(r.reason) } : {}),
    });
  }

  /** The leader will not take this host: say why, clearly, without repeating it every retry. */
  private onRefused(url: string, reason: string): void {
    clearTimeout(this.timers.register);
    this.refusedReason = reason;
    this.refusals++;
    const now = this.opts.now();
    const w = this.refusedWarned;
    const retry_ms = this.opts.reconnectMax_ms ?? RECONNECT_MS_MAX_DEFAULT;
    if (w === null || w.reason !== reason || now - w.at >= REFUSED_WARN_EVERY_MS) {
      this.refusedWarned = { reason, at: now };
      this.log.warn(`the leader refused this worker's registration: ${reason}`, { url, reason, retry_ms });
    }
  }

  private onRegistered(ws: WebSocket, url: string, leaderId: number, heartbeat_ms: number): void {
    clearTimeout(this.timers.register);
    if (this.refusedWarned !== null)
      this.log.info('registered after the leader had refused this worker', { refusals: this.refusals });
    this.refusedWarned = null;
    this.refusals = 0;
    this.registered = true;
    this.leaderId = leaderId;
    this.redirects = 0;
    this.backoff_ms = this.opts.reconnectMin_ms ?? RECONNECT_MS_MIN_DEFAULT;
    this.heartbeat_ms = heartbeat_ms;
    this.heartbeatSeq = 0;
    this.log.info('registered with the leader', {
      url,
      leader: leaderId,
      running: this.executor.size + this.adopted.size,
      unacked: this.pending.size,
    });
    clearInterval(this.timers.heartbeat);
    this.timers.heartbeat = setInterval(() => this.heartbeat(ws), heartbeat_ms);
    for (const p of this.pending.values()) if (p.sentAt !== -1) p.sentAt = 0;
    this.flushStatuses(true);
  }

  private heartbeat(ws: WebSocket): void {
    if (ws !== this.ws || !this.registered) return;
    // Counted in heartbeats, not wall time: a worker whose own event loop stalled did not miss anything.
    if (this.unanswered >= HEARTBEAT_MISSES_MAX) {
      this.log.warn('the leader stopped answering; reconnecting', {
        heartbeats_missed: this.unanswered,
        heartbeat_ms: this.heartbeat_ms,
      });
      ws.terminate();
      return;
    }
    this.send(ws, { type: 'heartbeat', host: this.opts.host, seq: this.heartbeatSeq++ });
    ws.ping();
    this.unanswered++;
  }

  private onClosed(ws: WebSocket, url: string, code: number, reason: string): void {
    if (ws !== this.ws) return;
    this.ws = null;
    const wasRegistered = this.registered;
    this.registered = false;
    this.leaderId = null;
    clearInterval(this.timers.heartbeat);
    clearTimeout(this.timers.register);
    const refused = this.refusedReason;
    this.refusedReason = null;
    if (this.stopped) return;
    if (wasRegistered) this.log.warn('lost the connection to the leader', { url });
    // A controller that closes for a policy reason (1008) without a `refused` frame (an older one,
    // or a frame it would not take) still says why in the close reason.
    else if (refused === null && code === 1008)
      this.log.warn(`the controller closed the connection: ${reason || 'no reason given'}`, { url, code });
    if (this.redirectTo !== null) {
      this.timers.reconnect = setTimeout(() => this.connect(), 0);
      return;
    }
    this.redirects = 0;
    this.next++;
    // Refused: nothing changes until an administrator acts, so wait the longest back-off.
    if (refused !== null) this.backoff_ms = this.opts.reconnectMax_ms ?? RECONNECT_MS_MAX_DEFAULT;
    const delay = Math.round(this.backoff_ms * (0.5 + 0.5 * this.opts.random()));
    if (refused !== null)
      this.log.debug('registration refused; retrying', { url, reason: refused, refusals: this.refusals, in_ms: delay });
    this.backoff_ms = Math.min(this.backoff_ms * 2, this.opts.reconnectMax_ms ?? RECONNECT_MS_MAX_DEFAULT);
    this.timers.reconnect = setTimeout(() => this.connect(), delay);
  }

  private send(ws: WebSocket, frame: WorkerToControllerFrame): boolean {
    if (ws.readyState !== WebSocket.OPEN) return false;
    ws.send(encodeFrame(frame));
    return true;
  }

  // ---- statuses ----

  private onJobEvent(e: JobEvent): void {
    const frame: StatusFrame = {
      type: 'status',
      host: this.opts.host,
      jobId: e.jobId,
      run: e.run,
      statusId: statusIdOf(this.opts.host, e.jobId, e.run, e.kind),
      kind: e.kind,
      time_ms: e.time_ms,
    };
    if (e.kind === 'started') frame.pid = e.pid;
    else {
      if (e.kind === 'finished') {
        frame.exitCode = e.exitCode;
        frame.signal = e.signal;
      }
      if (e.reason !== undefined) frame.reason = cut(e.reason);
      if (e.postExecError !== undefined) frame.postExecError = cut(e.postExecError);
    }
    this.log.info(`job ${e.kind}`, {
      jobId: e.jobId,
      run: e.run,
      ...(e.kind === 'started'
        ? { pid: e.pid }
        : { exitCode: frame.exitCode, signal: frame.signal, reason: frame.reason }),
    });
    this.queueStatus(frame);
  }

  /**
   * Write-ahead: a status is saved before it is first sent. Everything that changes in one turn of
   * the event loop shares one save (one fsync), so a burst of job events costs one write, not one each.
   */
  private queueStatus(frame: StatusFrame): void {
    this.pending.set(frame.statusId, { frame, sentAt: -1 });
    this.scheduleSave();
  }

  private scheduleSave(): void {
    if (this.saveScheduled) return;
    this.saveScheduled = true;
    setImmediate(() => {
      this.saveScheduled = false;
      if (this.stopped) return;
      this.save();
      for (const p of this.pending.values()) if (p.sentAt === -1) p.sentAt = 0;
      this.flushStatuses(false);
    });
  }

  /** Sends statuses not sent on this connection, or sent longer than the resend interval ago. */
  private flushStatuses(all: boolean): void {
    const ws = this.ws;
    if (ws === null || !this.registered) return;
    const now = this.opts.now();
    const resend_ms = this.opts.statusResend_ms ?? STATUS_RESEND_MS_DEFAULT;
    let sent = 0;
    for (const p of this.pending.values()) {
      if (sent >= STATUS_SEND_BATCH_MAX) break;
      if (p.sentAt === -1) continue; // not saved yet: the scheduled save sends it
      if (!all && p.sentAt !== 0 && now - p.sentAt < resend_ms) continue;
      if (!this.send(ws, p.frame)) return;
      p.sentAt = now;
      sent++;
    }
  }

  private waitForAcks(timeout_ms: number): Promise<void> {
    if (this.pending.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(resolve, timeout_ms);
      this.ackWaiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  // ---- persistence and adoption across a worker restart ----

  private onProgress(key: string, p: Progress | null, info: { jobId: number; run: number } | null): void {
    if (p === null || info === null) {
      this.progress.delete(key);
    } else {
      const prev = this.progress.get(key);
      this.progress.set(key, {
        jobId: info.jobId,
        run: info.run,
        phase: p.phase,
        pgid: p.pgid,
        procStart: p.procStart,
        end: p.end,
        jobReason: p.jobReason,
        pid: p.phase === 'job' ? p.pgid : (prev?.pid ?? null),
        startedAt: p.phase === 'job' && prev?.phase !== 'job' ? this.opts.now() : (prev?.startedAt ?? null),
      });
    }
    this.scheduleSave();
  }

  private save(): void {
    if (this.state === null) return;
    try {
      this.state.save({
        version: 1,
        host: this.opts.host,
        statuses: this.unacked(),
        runs: [...this.progress.values(), ...[...this.adopted.values()].map((a) => a.saved)],
        recent: this.executor.recentKeys(),
      });
    } catch (err) {
      this.log.error('cannot save the worker state file: statuses not yet acked would be lost by a restart', {
        path: this.state.path,
        error: err as Error,
      });
    }
  }

  private restore(): void {
    if (this.state === null) return;
    const s = this.state.load(this.opts.host);
    if (s === null) return;
    this.executor.remember(s.recent);
    for (const f of s.statuses) this.pending.set(f.statusId, { frame: f, sentAt: 0 });
    for (const r of s.runs) {
      const k = runKey(r.jobId, r.run);
      this.executor.remember([k]);
      const alive = r.pgid !== null && processAlive(r.pgid, r.procStart);
      if (r.phase === 'job' && alive) {
        this.adopted.set(k, { saved: r, killReason: null });
        this.log.info('adopted a job still running from before the restart', {
          jobId: r.jobId,
          run: r.run,
          pid: r.pgid,
        });
        continue;
      }
      if (alive) signalGroup(r.pgid as number, 'SIGKILL');
      const time_ms = this.opts.now();
      if (r.phase === 'setup') {
        this.onJobEvent({
          kind: 'launch-error',
          jobId: r.jobId,
          run: r.run,
          reason: 'xcecd restarted before the job started',
          time_ms,
        });
      } else if (r.phase === 'teardown' && r.end !== null) {
        this.onJobEvent({
          kind: 'finished',
          jobId: r.jobId,
          run: r.run,
          exitCode: r.end.exitCode,
          signal: r.end.signal,
          ...(r.jobReason !== null ? { reason: r.jobReason } : {}),
          postExecError: 'post-exec interrupted: xcecd restarted',
          time_ms,
        });
      } else {
        this.onJobEvent({
          kind: 'finished',
          jobId: r.jobId,
          run: r.run,
          exitCode: null,
          signal: null,
          reason: EXIT_UNKNOWN_REASON,
          time_ms,
        });
      }
    }
    this.save();
  }

  private killAdopted(a: Adopted, reason: string): void {
    if (a.killReason !== null || a.saved.pgid === null) return;
    a.killReason = reason;
    const pgid = a.saved.pgid;
    signalGroup(pgid, 'SIGTERM');
    setLongTimeout(() => signalGroup(pgid, 'SIGKILL'), this.opts.killGrace_ms).unref();
  }

  private pollAdopted(): void {
    for (const [k, a] of this.adopted) {
      const s = a.saved;
      if (s.pgid !== null && processAlive(s.pgid, s.procStart)) continue;
      this.adopted.delete(k);
      this.onJobEvent({
        kind: 'finished',
        jobId: s.jobId,
        run: s.run,
        exitCode: null,
        signal: null,
        reason: a.killReason ?? EXIT_UNKNOWN_REASON,
        time_ms: this.opts.now(),
      });
    }
    if (this.adopted.size === 0) clearInterval(this.timers.adopted);
  }
}

function cut(text: string): string {
  return Buffer.byteLength(text) <= REASON_BYTES_MAX ? text : `${text.slice(0, REASON_BYTES_MAX / 4)}…`;
}
