// The controller side of `/worker`, and the leader's scheduler loop and dispatcher.
//
// Workers connect to any controller; a follower answers `not-leader` with the leader's address.
// On the leader:
//  - registration and heartbeats tell which hosts are available;
//  - the scheduler (after a grace period that lets workers reconnect to a new leader, so nothing is
//    dispatched onto a host it cannot see yet) runs a pass over the pending jobs and proposes
//    DispatchFacts with the frozen record and the hash it merged with;
//  - the dispatcher sends `start` to the head host once a dispatch is APPLIED (so the record is
//    durable on a majority before anything runs), re-sends it when a worker registers without a
//    job the state says it should run, and sends `kill` when a running job is killed or requeued;
//  - statuses become JobStatusFacts; the worker gets `status-ack` only once the fact is applied,
//    so a failover loses none (the worker re-sends un-acked statuses).
//  - a host hosts.yaml does not list is refused at registration (`refused`, with the reason);
//  - a status or ack is taken only from the head host of the job's current run: one naming a run
//    dispatched to another host is dropped (logged once per host and run, counted), never proposed.

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { ControllerNode } from './controller-node.js';
import type { Logger } from './log.js';
import { refuse } from './http-server.js';
import {
  WORKER_FRAME_BYTES_MAX,
  WorkerFrameError,
  encodeFrame,
  parseStartInfo,
  parseWorkerFrame,
  verifyWorkerHeaders,
  type RegisterFrame,
  type StartInfo,
  type StatusFrame,
  type AckFrame,
  type ControllerToWorkerFrame,
} from './worker-protocol.js';
import { encodeFact } from '../statemachine/facts-codec.js';
import type { ApplyResult, FactBody, JobStatus } from '../statemachine/facts.js';
import type { Job } from '../statemachine/state.js';
import type { DispatchRecord } from '../statemachine/dispatch-record.js';
import { profileLabel } from '../model/profile-hash.js';
import { schedulePass } from '../scheduler/pass.js';

/** Workers heartbeat this often. */
export const WORKER_HEARTBEAT_MS = 1_000;
/** A host whose worker has been silent this long is not available for new jobs. */
export const HOST_SILENT_MS = 3 * WORKER_HEARTBEAT_MS;
/** A new leader waits this long for workers to reconnect before its first scheduling pass. */
export const SCHEDULER_GRACE_MS_DEFAULT = 2 * WORKER_HEARTBEAT_MS;
/** A scheduling pass runs at least this often on the leader (and on every relevant event). */
export const SCHEDULER_PERIOD_MS = 1_000;
/** A host silent this long is gone for good: its running jobs are requeued (they run again elsewhere). */
export const HOST_LOST_MS_DEFAULT = 60_000;
/** Passes are coalesced: at most one per this interval, however many events ask for one. */
export const SCHEDULER_PASS_INTERVAL_MS_MIN = 50;
/** The reason every pending job gets while no worker is connected to the leader. */
export const NO_WORKER_REASON = 'no worker is connected to the leader controller';
/** Dispatch decisions proposed by one pass, and in flight at once. */
export const DISPATCHES_PER_PASS_MAX = 2_000;
/** Starts a worker refused, remembered (the oldest forgotten first) so that a kill can end their jobs. */
export const REFUSED_STARTS_MAX = 65_536;
/** (host, job, run) reports from a host that does not run the job, remembered so that each is logged once. */
export const FOREIGN_REPORTS_LOGGED_MAX = 4_096;
/** A WebSocket close reason is at most 123 bytes. */
const CLOSE_REASON_BYTES_MAX = 123;

/** Why the leader refuses a worker registering as `host` when hosts.yaml does not list it. */
export function hostNotConfiguredReason(host: string): string {
  return `host ${host} is not in hosts.yaml: add it there (xceadmin config upgrade) before starting its xcecd`;
}

/**
 * Who may report on (job, run), as the applied state tells:
 *  - `head`: `host` is the head host of the job's current run;
 *  - `foreign`: the run is the job's current one, dispatched to another host (`head`);
 *  - `stale`: a run that can never be current again (an older run, or the current one after a
 *    requeue or restart): apply would ignore it;
 *  - `unknown`: a job or run this state has not applied yet (a new leader still applying its log).
 */
export type ReportJudgement =
  | { readonly kind: 'head' }
  | { readonly kind: 'foreign'; readonly head: string }
  | { readonly kind: 'stale' }
  | { readonly kind: 'unknown' };

interface WorkerConn {
  readonly host: string;
  readonly ws: WebSocket;
  lastSeen_ms: number;
  registered: boolean;
}

export interface WorkerHubOptions {
  readonly secret: Uint8Array;
  readonly log: Logger;
  readonly schedulerGrace_ms?: number;
  /** After this long without hearing from a host, requeue its running jobs (0: never). */
  readonly hostLost_ms?: number;
  readonly now?: () => number;
}

export class WorkerHub {
  private readonly wss = new WebSocketServer({
    noServer: true,
    maxPayload: WORKER_FRAME_BYTES_MAX,
    perMessageDeflate: false,
  });
  private readonly workers = new Map<string, WorkerConn>();
  /** Statuses proposed and not yet applied, by statusId (a re-send while in flight is not proposed twice). */
  private readonly statusInFlight = new Set<string>();
  /** Jobs with a dispatch proposed and not yet applied, with the record (what it will hold). */
  private readonly dispatchInFlight = new Map<number, DispatchRecord>();
  /** The last pass's reason for each pending job it could not place (leader only, not replicated). */
  private pendReasons = new Map<number, string>();
  /** What this leader told a worker to run: job → run and head host (for kills after a requeue). */
  private readonly started = new Map<number, { run: number; host: string }>();
  /** Starts a worker acked `refused`: job → run, host and the worker's reason. */
  private readonly refusedStarts = new Map<number, { run: number; host: string; reason: string }>();
  /** Jobs this leader is ending itself with a launch error (proposed, not yet applied). */
  private readonly endInFlight = new Set<number>();
  private schedulerTimer: NodeJS.Timeout | null = null;
  private schedulerFrom_ms = Infinity;
  private passQueued = false;
  private passRunning = false;
  private lastPass_ms = 0;
  /** Last time each host was heard from (kept after it disconnects); reset when this node starts leading. */
  private readonly hostSeen_ms = new Map<string, number>();
  private leaderSince_ms = 0;
  private readonly requeueInFlight = new Set<number>();
  /** Foreign reports already logged (`host job.run kind`), oldest first. */
  private readonly foreignLogged = new Set<string>();
  private noWorkers = false;
  private readonly now: () => number;
  passes = 0;
  /** Statuses dropped because their host does not run the job's current run. */
  foreignStatuses = 0;
  /** Start/kill acks dropped because their host does not run the job's current run. */
  foreignAcks = 0;
  /** Registrations refused (a host hosts.yaml does not list). */
  refusedRegistrations = 0;

  constructor(
    private readonly node: ControllerNode,
    private readonly opts: WorkerHubOptions,
  ) {
    this.now = opts.now ?? Date.now;
  }

  // ---- connections ----

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    let host: string;
    try {
      host = verifyWorkerHeaders(req.headers, this.opts.secret);
    } catch (err) {
      this.opts.log.warn('refused a worker connection', { error: (err as Error).message });
      return refuse(socket, 401, (err as Error).message);
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, host));
  }

  private accept(ws: WebSocket, host: string): void {
    const conn: WorkerConn = { host, ws, lastSeen_ms: this.now(), registered: false };
    ws.on('message', (data: Buffer) => {
      try {
        this.onFrame(conn, parseWorkerFrame(data.toString('utf8')));
      } catch (err) {
        if (!(err instanceof WorkerFrameError)) throw err;
        this.opts.log.warn('bad frame from a worker; closing it', { host, error: err.message });
        ws.close(1008, err.message.slice(0, 120));
      }
    });
    ws.on('close', () => {
      if (this.workers.get(host) === conn) {
        this.workers.delete(host);
        this.opts.log.info('worker disconnected', { host });
      }
    });
    ws.on('error', () => undefined);
  }

  private send(conn: WorkerConn, frame: ControllerToWorkerFrame): void {
    if (conn.ws.readyState === conn.ws.OPEN) conn.ws.send(JSON.stringify(frame));
  }

  private onFrame(conn: WorkerConn, f: ReturnType<typeof parseWorkerFrame>): void {
    conn.lastSeen_ms = this.now();
    if (conn.registered || f.type === 'register') this.hostSeen_ms.set(conn.host, conn.lastSeen_ms);
    if (f.type !== 'register' && !conn.registered) {
      conn.ws.close(1008, 'register first');
      return;
    }
    if (f.type !== 'register' && 'host' in f && f.host !== conn.host) {
      conn.ws.close(1008, `frames must name the authenticated host ${conn.host}`);
      return;
    }
    switch (f.type) {
      case 'register':
        return this.onRegister(conn, f);
      case 'heartbeat':
        return;
      case 'status':
        return this.onStatus(conn, f);
      case 'ack':
        return this.onAck(conn, f);
    }
  }

  private onRegister(conn: WorkerConn, f: RegisterFrame): void {
    if (f.host !== conn.host) {
      conn.ws.close(1008, `register names ${f.host} but the connection authenticated as ${conn.host}`);
      return;
    }
    if (!this.node.isLeader()) {
      const lead = this.node.leaderId();
      const address = lead ? this.node.addressOf(lead) : null;
      this.send(conn, { type: 'not-leader', ...(address !== null ? { leader: { id: lead, address } } : {}) });
      conn.ws.close(1000, 'not the leader');
      return;
    }
    // Only a host of the replicated hosts.yaml may register (with no configuration yet there is
    // nothing to check against, and nothing is scheduled either). The worker retries, backing off:
    // it may have been started before the configuration upgrade that adds its host.
    const config = this.node.state.config?.cluster;
    if (config !== undefined && !config.hosts.has(conn.host)) {
      const reason = hostNotConfiguredReason(conn.host);
      this.refusedRegistrations++;
      this.opts.log.warn('refused a worker registration', { host: conn.host, reason });
      this.send(conn, { type: 'refused', reason });
      conn.ws.close(1008, cutCloseReason(reason));
      return;
    }
    const old = this.workers.get(conn.host);
    if (old !== undefined && old !== conn) old.ws.close(1000, 'replaced by a new connection from the same host');
    conn.registered = true;
    this.workers.set(conn.host, conn);
    this.send(conn, { type: 'registered', leaderId: this.node.id, heartbeat_ms: WORKER_HEARTBEAT_MS });
    this.opts.log.info('worker registered', { host: conn.host, running: f.running.length, version: f.version });
    this.reconcile(conn, new Set(f.running.map((r) => `${r.jobId}.${r.run}`)));
    this.requestPass();
  }

  /** After a (re)registration: re-send starts the worker never got, kills for what should not run. */
  private reconcile(conn: WorkerConn, running: ReadonlySet<string>): void {
    const state = this.node.state;
    for (const key of running) {
      const [id, run] = key.split('.').map(Number) as [number, number];
      const job = state.jobs.get(id);
      if (job === undefined || job.state !== 'RUN' || job.runNumber !== run || job.killRequestedBy !== null) {
        this.send(conn, {
          type: 'kill',
          jobId: id,
          run,
          reason: job?.killRequestedBy
            ? `killed by ${job.killRequestedBy}`
            : "the job is no longer running in the controller's state",
        });
      }
    }
    for (const job of state.jobs.values()) {
      if (job.state !== 'RUN' || job.record === null || job.record.hosts[0]?.host !== conn.host) continue;
      this.started.set(job.id, { run: job.runNumber, host: conn.host });
      if (!job.started && !running.has(`${job.id}.${job.runNumber}`)) this.sendStart(job);
    }
  }

  /** Who may report on (jobId, run) by this node's applied state (see ReportJudgement). */
  judgeReport(host: string, jobId: number, run: number): ReportJudgement {
    const state = this.node.state;
    const job = state.jobs.get(jobId);
    if (job === undefined) return jobId < state.nextJobId ? { kind: 'stale' } : { kind: 'unknown' };
    if (run > job.runNumber) return { kind: 'unknown' };
    if (run < job.runNumber || job.record === null) return { kind: 'stale' };
    const head = job.record.hosts[0]?.host;
    if (head === undefined) return { kind: 'stale' };
    return head === host ? { kind: 'head' } : { kind: 'foreign', head };
  }

  /** A report from a host that does not run the job's current run: dropped, counted, logged once per (host, job, run, kind). */
  private dropForeign(
    what: 'status' | 'ack',
    host: string,
    head: string,
    jobId: number,
    run: number,
    kind: string,
  ): void {
    if (what === 'status') this.foreignStatuses++;
    else this.foreignAcks++;
    const key = `${host} ${jobId}.${run} ${what} ${kind}`;
    if (this.foreignLogged.has(key)) return;
    this.foreignLogged.add(key);
    while (this.foreignLogged.size > FOREIGN_REPORTS_LOGGED_MAX)
      this.foreignLogged.delete(this.foreignLogged.values().next().value as string);
    this.opts.log.warn(`dropped ${what === 'ack' ? 'an ack' : 'a status'} from a host that does not run the job`, {
      host,
      headHost: head,
      job: jobId,
      run,
      kind,
      reason: `job ${jobId} run ${run} is dispatched to host ${head}, not to host ${host}`,
    });
  }

  private onStatus(conn: WorkerConn, f: StatusFrame): void {
    if (this.statusInFlight.has(f.statusId)) return;
    if (!this.node.isLeader()) {
      this.send(conn, { type: 'not-leader' });
      conn.ws.close(1000, 'not the leader');
      return;
    }
    const judged = this.judgeReport(conn.host, f.jobId, f.run);
    switch (judged.kind) {
      case 'head':
        break;
      case 'foreign':
        // Never proposed, never acked: it changes nothing, whatever the sender does next.
        this.dropForeign('status', conn.host, judged.head, f.jobId, f.run, f.kind);
        return;
      case 'stale':
        // Apply would ignore it: acked without a proposal, so that the worker stops re-sending it
        // (a host back from the dead reporting on a run requeued meanwhile, say).
        this.opts.log.debug('status on a run that is over; acked, not proposed', {
          host: conn.host,
          job: f.jobId,
          run: f.run,
          kind: f.kind,
        });
        this.send(conn, { type: 'status-ack', statusId: f.statusId });
        return;
      case 'unknown':
        // This node has not applied the job's dispatch (yet): the worker re-sends it.
        this.opts.log.debug('status on a run this controller has not applied yet; the worker will re-send it', {
          host: conn.host,
          job: f.jobId,
          run: f.run,
          kind: f.kind,
        });
        return;
    }
    let status: JobStatus;
    if (f.kind === 'started') status = { type: 'started', pid: f.pid ?? 0, timeMs: f.time_ms };
    else if (f.kind === 'launch-error')
      status = { type: 'launchError', reason: f.reason ?? 'the worker could not launch the job' };
    else {
      const reason = [f.reason, f.postExecError ? `post-exec: ${f.postExecError}` : undefined]
        .filter(Boolean)
        .join('; ');
      status = {
        type: 'finished',
        exitCode: f.exitCode ?? (f.signal ? 128 : 255),
        signal: f.signal ?? null,
        reason: reason === '' ? null : reason,
        timeMs: f.time_ms,
      };
    }
    this.statusInFlight.add(f.statusId);
    this.propose({ kind: 'status', jobId: f.jobId, runNumber: f.run, status }).then(
      () => {
        this.statusInFlight.delete(f.statusId);
        const c = this.workers.get(f.host);
        if (c !== undefined) this.send(c, { type: 'status-ack', statusId: f.statusId });
      },
      (err: Error) => {
        this.statusInFlight.delete(f.statusId);
        this.opts.log.debug('status not committed; the worker will re-send it', {
          statusId: f.statusId,
          error: err.message,
        });
      },
    );
  }

  /**
   * A start a worker refused is remembered: its launch-error status normally follows, but should
   * none come (an older worker, or one whose queue of statuses is full), a kill must still end the
   * job. A kill for a run the head host does not know, of a job that never started, ends it too:
   * nothing runs it, and nothing else would.
   */
  private onAck(conn: WorkerConn, f: AckFrame): void {
    const judged = this.judgeReport(conn.host, f.jobId, f.run);
    if (judged.kind === 'foreign') {
      this.dropForeign('ack', conn.host, judged.head, f.jobId, f.run, `${f.ref} ${f.outcome}`);
      return;
    }
    // Acks on other runs change nothing (a kill of an old run after a requeue is acked so).
    if (judged.kind !== 'head') return;
    if (f.ref === 'start' && f.outcome === 'refused') {
      this.opts.log.warn('a worker refused a start', { host: conn.host, job: f.jobId, run: f.run, reason: f.reason });
      this.refusedStarts.delete(f.jobId);
      this.refusedStarts.set(f.jobId, { run: f.run, host: conn.host, reason: f.reason ?? 'no reason given' });
      while (this.refusedStarts.size > REFUSED_STARTS_MAX)
        this.refusedStarts.delete(this.refusedStarts.keys().next().value as number);
      return;
    }
    if (f.ref === 'kill' && f.outcome === 'unknown') {
      const job = this.node.state.jobs.get(f.jobId);
      if (
        job === undefined ||
        job.state !== 'RUN' ||
        job.runNumber !== f.run ||
        job.started ||
        job.killRequestedBy === null
      )
        return;
      if (job.record?.hosts[0]?.host !== conn.host) return;
      this.endUnstarted(
        job,
        `killed by ${job.killRequestedBy} before it started: host ${conn.host} does not run job ${job.id} run ${job.runNumber}`,
      );
    }
  }

  /** Proposes the launch error that ends a job no worker runs (once at a time per job). */
  private endUnstarted(job: Job, reason: string): void {
    if (this.endInFlight.has(job.id) || !this.node.isLeader()) return;
    this.endInFlight.add(job.id);
    this.opts.log.warn('ending a job that no worker runs', { job: job.id, run: job.runNumber, reason });
    const done = (): void => {
      this.endInFlight.delete(job.id);
    };
    this.propose({
      kind: 'status',
      jobId: job.id,
      runNumber: job.runNumber,
      status: { type: 'launchError', reason },
    }).then(done, done);
  }

  private propose(body: FactBody): Promise<ApplyResult> {
    return this.node.propose(encodeFact({ clientId: null, sequence: 0, timeMs: this.now(), body }));
  }

  // ---- leadership and events ----

  onLeadership(leader: boolean): void {
    if (leader) {
      this.schedulerFrom_ms = this.now() + (this.opts.schedulerGrace_ms ?? SCHEDULER_GRACE_MS_DEFAULT);
      this.started.clear();
      this.hostSeen_ms.clear();
      this.leaderSince_ms = this.now();
      if (this.schedulerTimer === null) {
        this.schedulerTimer = setInterval(() => {
          this.requeueLostHosts();
          this.requestPass();
        }, SCHEDULER_PERIOD_MS);
      }
      this.opts.log.info('scheduler starts after the worker grace period', {
        grace_ms: this.opts.schedulerGrace_ms ?? SCHEDULER_GRACE_MS_DEFAULT,
      });
    } else {
      if (this.schedulerTimer !== null) clearInterval(this.schedulerTimer);
      this.schedulerTimer = null;
      this.schedulerFrom_ms = Infinity;
      // Workers must follow the new leader.
      for (const c of this.workers.values()) {
        this.send(c, { type: 'not-leader' });
        c.ws.close(1000, 'not the leader any more');
      }
      this.workers.clear();
    }
  }

  /** Called after every applied batch: dispatch what was dispatched, kill what must stop. */
  onApplied(results: ReadonlyArray<{ index: number; result: ApplyResult }>): void {
    if (!this.node.isLeader()) return;
    let pass = false;
    const state = this.node.state;
    for (const { result } of results) {
      switch (result.kind) {
        case 'dispatched': {
          const job = state.jobs.get(result.jobId);
          if (job !== undefined && job.state === 'RUN') this.sendStart(job);
          break;
        }
        case 'controlled': {
          const job = state.jobs.get(result.jobId);
          const was = this.started.get(result.jobId);
          if (job === undefined) break;
          const refused = this.refusedStarts.get(job.id);
          if (
            job.state === 'RUN' &&
            job.killRequestedBy !== null &&
            !job.started &&
            refused !== undefined &&
            refused.run === job.runNumber
          ) {
            this.endUnstarted(
              job,
              `killed by ${job.killRequestedBy} before it started: host ${refused.host} refused its start: ${refused.reason}`,
            );
          } else if (job.state === 'RUN' && job.killRequestedBy !== null)
            this.sendKill(
              job.id,
              job.runNumber,
              job.record?.hosts[0]?.host ?? null,
              `killed by ${job.killRequestedBy}`,
            );
          else if (was !== undefined && (job.state !== 'RUN' || job.runNumber !== was.run)) {
            this.sendKill(job.id, was.run, was.host, 'requeued');
            this.started.delete(job.id);
          }
          pass = true;
          break;
        }
        case 'submitted':
        case 'declined':
        case 'configApplied':
          pass = true;
          break;
        case 'statusApplied': {
          const job = state.jobs.get(result.jobId);
          if (job !== undefined && job.state !== 'RUN') {
            this.started.delete(job.id);
            this.refusedStarts.delete(job.id);
            pass = true;
          }
          break;
        }
        default:
          break;
      }
    }
    if (pass) this.requestPass();
  }

  private startInfo(job: Job): StartInfo | null {
    const rec = job.record;
    if (rec === null || rec.hosts.length === 0) return null;
    const limits: StartInfo['limits'] = {};
    for (const [k, v] of Object.entries(rec.limits) as Array<
      [keyof StartInfo['limits'], { value: number } | undefined]
    >)
      if (v !== undefined) limits[k] = v.value;
    return {
      jobId: job.id,
      run: job.runNumber,
      user: job.user,
      queue: job.queue,
      profile: rec.profile,
      profileLabel:
        rec.profile !== null && rec.profileHash !== null ? profileLabel(rec.profile, rec.profileHash) : null,
      mode: rec.mode,
      launchType: rec.launchType,
      command: [...job.spec.command],
      cwd: job.spec.cwd ?? '',
      stdout: job.spec.stdoutPath,
      stderr: job.spec.stderrPath,
      tasks: rec.tasks,
      hosts: rec.hosts.map((h) => ({ host: h.host, tasks: h.tasks })),
      profileEnv: rec.env
        .filter((e) => e.origin === 'profile')
        .map((e) => ({ name: e.value.name, value: e.value.value })),
      jobEnv: rec.env.filter((e) => e.origin === 'job').map((e) => ({ name: e.value.name, value: e.value.value })),
      profilePreExec: rec.profilePreExec,
      profilePostExec: rec.profilePostExec,
      jobPreExec: rec.jobPreExec,
      jobPostExec: rec.jobPostExec,
      limits,
    };
  }

  private sendStart(job: Job): void {
    const info = this.startInfo(job);
    if (info === null) return;
    const host = info.hosts[0]!.host;
    // What the worker would refuse is never sent: the job ends here with the reason (admission
    // keeps such jobs out; a record from an older version, or a bug, could still hold one).
    let frame: string;
    try {
      frame = encodeFrame({ type: 'start', startInfo: parseStartInfo(info) });
    } catch (err) {
      if (!(err instanceof WorkerFrameError)) throw err;
      const problem = err.message.replace(/^bad start info: /, '');
      this.endUnstarted(
        job,
        `the controller cannot send the start of job ${job.id} run ${job.runNumber} to host ${host}: ${problem}`,
      );
      return;
    }
    this.started.set(job.id, { run: job.runNumber, host });
    const c = this.workers.get(host);
    // A worker not connected now gets the start when it registers (reconcile).
    if (c !== undefined && c.ws.readyState === c.ws.OPEN) c.ws.send(frame);
  }

  private sendKill(jobId: number, run: number, host: string | null, reason: string): void {
    if (host === null) return;
    const c = this.workers.get(host);
    if (c !== undefined) this.send(c, { type: 'kill', jobId, run, reason });
  }

  /**
   * A host that has been silent for hostLost_ms is gone for good: each job running on it is
   * requeued (back to PEND; the next dispatch re-reads its profile, and it runs elsewhere). Should
   * the host come back, its worker is told to kill the old run when it registers (reconcile). The
   * requeue is proposed on the owner's behalf, so it passes the owner's own RBAC check in apply.
   */
  private requeueLostHosts(): void {
    const lost_ms = this.opts.hostLost_ms ?? HOST_LOST_MS_DEFAULT;
    if (lost_ms <= 0 || !this.node.isLeader()) return;
    const now = this.now();
    for (const job of this.node.state.jobs.values()) {
      if (job.state !== 'RUN' || job.record === null || this.requeueInFlight.has(job.id)) continue;
      const host = job.record.hosts[0]?.host;
      if (host === undefined) continue;
      const seen = this.hostSeen_ms.get(host) ?? this.leaderSince_ms;
      if (now - seen < lost_ms) continue;
      this.requeueInFlight.add(job.id);
      this.opts.log.warn('host lost: requeueing its job', {
        host,
        job: job.id,
        run: job.runNumber,
        silent_ms: now - seen,
      });
      this.propose({ kind: 'control', jobId: job.id, action: 'requeue', user: job.user }).then(
        () => this.requeueInFlight.delete(job.id),
        () => this.requeueInFlight.delete(job.id),
      );
    }
  }

  // ---- the scheduler ----

  /** Why the scheduler could not place a pending job in its last pass (this node must lead). */
  schedulerPendReason(jobId: number): string | undefined {
    if (!this.node.isLeader()) return undefined;
    return this.noWorkers ? NO_WORKER_REASON : this.pendReasons.get(jobId);
  }

  /** Hosts whose worker is registered and heard from recently. */
  availableHosts(): Set<string> {
    const now = this.now();
    const out = new Set<string>();
    for (const c of this.workers.values()) if (c.registered && now - c.lastSeen_ms <= HOST_SILENT_MS) out.add(c.host);
    return out;
  }

  requestPass(): void {
    if (!this.node.isLeader() || this.now() < this.schedulerFrom_ms) return;
    if (this.passRunning) {
      this.passQueued = true;
      return;
    }
    this.passRunning = true;
    // Coalesce: a burst of submits or statuses asks for one pass, not one each.
    const wait = Math.max(0, this.lastPass_ms + SCHEDULER_PASS_INTERVAL_MS_MIN - this.now());
    if (wait === 0) setImmediate(() => this.runPass());
    else setTimeout(() => this.runPass(), wait);
  }

  private runPass(): void {
    try {
      do {
        this.passQueued = false;
        if (!this.node.isLeader() || this.node.state.config === null) return;
        const budget = DISPATCHES_PER_PASS_MAX - this.dispatchInFlight.size;
        if (budget <= 0) return;
        const available = this.availableHosts();
        this.lastPass_ms = this.now();
        // With no worker there is nothing to place: skip the O(pending) pass; the reason is known.
        this.noWorkers = available.size === 0;
        if (this.noWorkers) {
          this.pendReasons = new Map();
          return;
        }
        const inFlight = new Set(this.dispatchInFlight.keys());
        const pass = schedulePass(this.node.state, available, {
          maxDispatches: budget,
          exclude: inFlight,
          inFlight: [...this.dispatchInFlight.values()],
        });
        this.passes++;
        this.pendReasons = pass.pending;
        for (const d of pass.decisions) {
          this.dispatchInFlight.set(d.jobId, d.record);
          this.propose({
            kind: 'dispatch',
            jobId: d.jobId,
            runNumber: d.runNumber,
            placement: d.placement,
            record: d.record,
            schedulerHash: d.schedulerHash,
          }).then(
            (r) => {
              this.dispatchInFlight.delete(d.jobId);
              if (r.kind === 'declined')
                this.opts.log.info('dispatch declined; the job stays pending', {
                  job: d.jobId,
                  code: r.code,
                  message: r.message,
                });
            },
            () => this.dispatchInFlight.delete(d.jobId),
          );
        }
      } while (this.passQueued);
    } catch (err) {
      this.opts.log.error('scheduling pass failed', { error: (err as Error).message, stack: (err as Error).stack });
    } finally {
      this.passRunning = false;
    }
  }

  close(): void {
    if (this.schedulerTimer !== null) clearInterval(this.schedulerTimer);
    for (const c of this.wss.clients) c.terminate();
    this.wss.close();
  }
}

/** Wires a hub into a controller (`xcectld` calls this unless --no-scheduler). */
export function attachHub(
  node: ControllerNode,
  secret: Uint8Array,
  opts: { schedulerGrace_ms?: number; hostLost_ms?: number } = {},
): WorkerHub {
  const hub = new WorkerHub(node, { secret, log: node.log.child({ component: 'scheduler' }), ...opts });
  node.onLeadership((leader) => hub.onLeadership(leader));
  node.onApplied((results) => hub.onApplied(results));
  return hub;
}

/** A close reason within the WebSocket limit (host names are ASCII, so are these reasons). */
function cutCloseReason(text: string): string {
  return Buffer.byteLength(text) <= CLOSE_REASON_BYTES_MAX ? text : `${text.slice(0, CLOSE_REASON_BYTES_MAX - 3)}...`;
}
