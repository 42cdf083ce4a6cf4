// The controller side of `/worker`: the WebSocket, who may register (a follower answers
// `not-leader`, a host hosts.yaml does not list is `refused`), the registration's resources made a
// replicated fact before the worker is `registered` (statemachine/host-capacity.ts: the scheduler
// uses the smaller of them and hosts.yaml), frames in and out, heartbeats
// (which hosts are available), statuses proposed as JobStatusFacts (those of one event-loop turn
// in one BatchFact) and acked once applied (to a worker with `reports-batch`, the statuses of one
// apply in one `status-acks` frame, and its `reports` frames taken: worker-report-frames.ts), reports
// only from the head host, and hosts lost for good (their running jobs requeued). Handshakes and
// registrations pass the leader's bound on them (registration-gate.ts): past it, `busy`.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { HubContext } from './hub-context.js';
import { refuse } from './http-server.js';
import { notLeaderReply } from './net/not-leader.js';
import { PeekRequests, type PeekQuery } from './worker-peeks.js';
export { PeekUnavailable } from './worker-peeks.js';
import {
  WORKER_FRAME_BYTES_MAX,
  WorkerFrameError,
  parseWorkerFrame,
  type RegisterFrame,
  type ControllerToWorkerFrame,
  type PeekDataFrame,
  type StatusFrame,
} from './worker-protocol.js';
import {
  FEATURE_FAILOVER_SPREAD,
  FEATURE_PING_HEARTBEAT,
  FEATURE_START_BATCH,
  workerFeatures,
} from './worker-start-batch.js';
import { FEATURE_REPORTS_BATCH, statusAckFrames, unbatchReports } from './worker-report-frames.js';
import { ReportIntake } from './worker-report-intake.js';
import { WorkerFrameCounts } from './worker-frame-counts.js';
import { admitWorker, cutCloseReason, dropRevoked } from './worker-admission.js';
import { registrationOf, sameResources } from './host-registration.js';
import { hostNotConfiguredReason } from '../statemachine/apply-host.js';
import { hostCapacity, registrationProblem } from '../statemachine/host-capacity.js';
import { HostLiveness } from './host-liveness.js';
import { WorkerEventLog } from './worker-log.js';
import { RegistrationGate, type RegistrationGateStats } from './registration-gate.js';
import { answerBusy } from './worker-busy.js';
import { answerChallengeNotLeader, answerNotLeader, isWorkerChallenge } from './worker-redirect.js';
import { WORKER_REGISTRATIONS_DEFAULT } from '../model/config-types.js';
import type { Registration, WorkerConn, WorkerEndpointOptions } from './worker-conn.js';

/** Workers heartbeat this often. */
export const WORKER_HEARTBEAT_MS = 1_000;
/** A host whose worker has been silent this long is not available for new jobs. */
export const HOST_SILENT_MS = 3 * WORKER_HEARTBEAT_MS;
/** A host silent this long is gone for good: its running jobs are requeued (they run again elsewhere). */
export const HOST_LOST_MS_DEFAULT = 60_000;
export { hostNotConfiguredReason };

export type { Registration, WorkerEndpointOptions } from './worker-conn.js';

export class WorkerEndpoint {
  private readonly wss = new WebSocketServer({
    noServer: true,
    maxPayload: WORKER_FRAME_BYTES_MAX,
    perMessageDeflate: false,
  });
  private readonly workers = new Map<string, WorkerConn>();
  /** Every open connection, registered or not. */
  private readonly conns = new Set<WorkerConn>();
  /** Handshakes and register frames, `worker_registrations.per_turn` a turn; past `queued_max`, `busy`. */
  private readonly gate: RegistrationGate;
  /** When each host was last heard from, and the hosts silent for good. */
  private readonly liveness: HostLiveness;
  private readonly registeredListeners: Array<(r: Registration) => void> = [];
  /** Statuses and acks (worker-report-intake.ts). */
  readonly reports: ReportIntake;
  /** Registrations refused (a host hosts.yaml does not list). */
  refusedRegistrations = 0;
  private readonly events: WorkerEventLog;
  /** Peeks sent to workers and not answered yet. */
  private readonly peeks = new PeekRequests();
  /** Frames received and sent, by type (GET /metrics). */
  readonly frames = new WorkerFrameCounts();

  constructor(
    private readonly ctx: HubContext,
    private readonly opts: WorkerEndpointOptions,
  ) {
    this.reports = new ReportIntake(ctx, (host, ids) => {
      const c = this.workers.get(host);
      if (c !== undefined) this.ackStatuses(c, ids);
    });
    this.liveness = new HostLiveness(ctx, opts.hostLost_ms ?? HOST_LOST_MS_DEFAULT);
    this.events = new WorkerEventLog(ctx.log, ctx.now);
    this.gate = new RegistrationGate(
      () => ctx.node.state.config?.cluster.cluster.workerRegistrations ?? WORKER_REGISTRATIONS_DEFAULT,
      ctx.now,
    );
  }

  /** Called for each worker the leader accepts, after `registered` is sent. */
  onRegistered(listener: (r: Registration) => void): void {
    this.registeredListeners.push(listener);
  }

  // ---- connections and frames ----

  /** Handshakes wait in the gate's queue; past its bound the worker is answered `busy` (worker-busy.ts). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const retry_ms = this.gate.offer(() => {
      if (!socket.destroyed) this.upgrade(req, socket, head);
    });
    if (retry_ms !== null) answerBusy(socket, retry_ms);
  }

  /**
   * A worker's `GET /challenge?for=worker` on a controller that is not the leader: answered 421
   * `not-leader` (worker-redirect.ts), true; false for any other request, or on the leader.
   */
  answerMisdirectedChallenge(req: IncomingMessage, res: ServerResponse): boolean {
    if (!isWorkerChallenge(req) || this.ctx.node.isLeader()) return false;
    const reply = this.notLeader();
    if (reply.type !== 'not-leader') return false;
    answerChallengeNotLeader(res, reply);
    return true;
  }

  /** Handshakes and registrations waiting, and workers answered `busy` (GET /metrics). */
  registrationStats(): RegistrationGateStats {
    return this.gate.stats();
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const a = admitWorker(req, this.opts, this.ctx.node.state.hostCredentials, this.ctx.log);
    if ('refused' in a) return refuse(socket, 401, a.refused);
    // Authenticated, but this controller is not the leader: sent on without a WebSocket (worker-redirect.ts).
    const reply = this.ctx.node.isLeader() ? null : this.notLeader();
    if (reply?.type === 'not-leader') return answerNotLeader(socket, reply);
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, a.host, a.epoch, workerFeatures(req.headers)));
  }

  /**
   * After a credential fact: closes every connection whose host is now revoked or enrolled at a
   * later epoch than it authenticated with (on every controller: each applies the same fact).
   */
  dropRevoked(): void {
    dropRevoked(this.conns, this.ctx.node.state.hostCredentials, this.ctx.log);
  }

  private accept(ws: WebSocket, host: string, epoch: number, features: ReadonlySet<string>): void {
    const conn: WorkerConn = {
      host,
      epoch,
      ws,
      startBatch: features.has(FEATURE_START_BATCH),
      reportsBatch: features.has(FEATURE_REPORTS_BATCH),
      failoverSpread: features.has(FEATURE_FAILOVER_SPREAD),
      pingHeartbeat: features.has(FEATURE_PING_HEARTBEAT),
      lastSeen_ms: this.ctx.now(),
      registered: false,
      registerQueued: false,
    };
    this.conns.add(conn);
    ws.on('message', (data: Buffer) => {
      try {
        const f = parseWorkerFrame(data.toString('utf8'));
        this.frames.in(f.type);
        this.onFrame(conn, f);
      } catch (err) {
        if (!(err instanceof WorkerFrameError)) throw err;
        this.ctx.log.warn('bad frame from a worker; closing it', { host, error: err.message });
        ws.close(1008, err.message.slice(0, 120));
      }
    });
    // A registered worker's ping is a heartbeat (FEATURE_PING_HEARTBEAT); `ws` answers it with the pong.
    ws.on('ping', () => {
      if (!conn.registered) return;
      conn.lastSeen_ms = this.ctx.now();
      this.liveness.heard(conn.host, conn.lastSeen_ms);
    });
    ws.on('close', () => {
      this.conns.delete(conn);
      if (this.workers.get(host) === conn) {
        this.workers.delete(host);
        this.events.disconnected(host);
      }
    });
    ws.on('error', () => undefined);
  }

  /** `not-leader`, with the leader's id and address when this node knows them (the worker dials it next). */
  private notLeader(): ControllerToWorkerFrame {
    const reply = notLeaderReply(this.ctx.node);
    return reply.leader === undefined ? { type: 'not-leader' } : { type: 'not-leader', leader: reply.leader };
  }

  private send(conn: WorkerConn, frame: ControllerToWorkerFrame): void {
    if (conn.ws.readyState !== conn.ws.OPEN) return;
    conn.ws.send(JSON.stringify(frame));
    this.frames.out(frame.type);
  }

  /** Sends to the worker of `host`, when one is connected. */
  sendTo(host: string, frame: ControllerToWorkerFrame): void {
    const c = this.workers.get(host);
    if (c !== undefined) this.send(c, frame);
  }

  /** Acks statuses on `conn`: in `status-acks` frames when its worker takes them, else one `status-ack` each. */
  private ackStatuses(conn: WorkerConn, statusIds: readonly string[]): void {
    if (conn.reportsBatch) for (const f of statusAckFrames(statusIds)) this.send(conn, f);
    else for (const statusId of statusIds) this.send(conn, { type: 'status-ack', statusId });
  }

  /** Whether the worker of `host` is connected and takes `start` frames carrying several jobs. */
  acceptsStartBatches(host: string): boolean {
    return this.workers.get(host)?.startBatch === true;
  }

  /** Sends an encoded `start` frame to the worker of `host`, when one is connected and open. */
  sendText(host: string, text: string): void {
    const c = this.workers.get(host);
    if (c === undefined || c.ws.readyState !== c.ws.OPEN) return;
    c.ws.send(text);
    this.frames.out('start');
  }

  private onFrame(conn: WorkerConn, f: ReturnType<typeof parseWorkerFrame>): void {
    conn.lastSeen_ms = this.ctx.now();
    if (conn.registered || f.type === 'register') this.liveness.heard(conn.host, conn.lastSeen_ms);
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
        // The connection passed the gate: its registration is queued whatever the queue's length.
        if (conn.registerQueued) return;
        conn.registerQueued = true;
        return this.gate.admit(() => {
          conn.registerQueued = false;
          if (conn.ws.readyState === conn.ws.OPEN) this.onRegister(conn, f);
        });
      case 'heartbeat':
        return;
      case 'status':
        return this.onStatuses(conn, [f]);
      case 'ack':
        return this.reports.ack(conn.host, f);
      case 'reports': {
        // One turn's reports of the worker: its acks as they came, then its statuses in one batch.
        const r = unbatchReports(f);
        for (const a of r.acks) this.reports.ack(conn.host, a);
        return r.statuses.length > 0 ? this.onStatuses(conn, r.statuses) : undefined;
      }
      case 'peek-data':
        return this.peeks.answer(conn.host, f);
    }
  }

  private onStatuses(conn: WorkerConn, statuses: readonly StatusFrame[]): void {
    if (this.reports.statuses(conn.host, statuses, (ids) => this.ackStatuses(conn, ids))) return;
    this.send(conn, this.notLeader());
    conn.ws.close(1000, 'not the leader');
  }

  private onRegister(conn: WorkerConn, f: RegisterFrame): void {
    const node = this.ctx.node;
    if (f.host !== conn.host) {
      conn.ws.close(1008, `register names ${f.host} but the connection authenticated as ${conn.host}`);
      return;
    }
    if (!node.isLeader()) {
      this.send(conn, this.notLeader());
      conn.ws.close(1000, 'not the leader');
      return;
    }
    // Only a host of the replicated hosts.yaml may register (with no configuration yet there is
    // nothing to check against, and nothing is scheduled either). The worker retries, backing off:
    // it may have been started before the configuration upgrade that adds its host.
    const config = node.state.config?.cluster;
    if (config !== undefined && !config.hosts.has(conn.host))
      return this.refuseRegistration(conn, hostNotConfiguredReason(conn.host));
    const registration = registrationOf(conn.host, f.resources, this.ctx.now());
    const problem = registrationProblem(registration);
    if (problem !== null) return this.refuseRegistration(conn, problem);
    // The resources are a replicated fact, so that every controller (and the next leader) uses the
    // same capacity; the worker is `registered`, and takes jobs, once it is applied.
    const known = node.state.hosts.get(conn.host);
    if (known !== undefined && sameResources(known, registration)) return this.acceptRegistration(conn, f);
    this.ctx.propose({ kind: 'host', registration }).then(
      (result) => {
        if (result.kind === 'rejected') this.refuseRegistration(conn, result.message);
        else if (conn.ws.readyState === conn.ws.OPEN && this.ctx.node.isLeader()) this.acceptRegistration(conn, f);
        else conn.ws.close(1000, 'not the leader any more');
      },
      (err: Error) => {
        this.ctx.log.debug('registration not committed; the worker will register again', {
          host: conn.host,
          error: err.message,
        });
        conn.ws.close(1013, 'registration not committed; try again');
      },
    );
  }

  private refuseRegistration(conn: WorkerConn, reason: string): void {
    this.refusedRegistrations++;
    this.ctx.log.warn('refused a worker registration', { host: conn.host, reason });
    this.send(conn, { type: 'refused', reason });
    conn.ws.close(1008, cutCloseReason(reason));
  }

  private acceptRegistration(conn: WorkerConn, f: RegisterFrame): void {
    const node = this.ctx.node;
    const old = this.workers.get(conn.host);
    if (old !== undefined && old !== conn) old.ws.close(1000, 'replaced by a new connection from the same host');
    conn.registered = true;
    this.workers.set(conn.host, conn);
    // `features` and `hosts` only to a worker that named them: an older worker's `registered` has no such field.
    const features = [
      ...(conn.reportsBatch ? [FEATURE_REPORTS_BATCH] : []),
      ...(conn.pingHeartbeat ? [FEATURE_PING_HEARTBEAT] : []),
    ];
    this.send(conn, {
      type: 'registered',
      leaderId: node.id,
      heartbeat_ms: WORKER_HEARTBEAT_MS,
      ...(features.length > 0 ? { features } : {}),
      ...(conn.failoverSpread ? { hosts: node.state.config?.cluster.hosts.size ?? 0 } : {}),
    });
    this.events.registered({ host: conn.host, running: f.running.length, version: f.version });
    const configured = node.state.config?.cluster.hosts.get(conn.host);
    if (configured !== undefined) {
      const mismatches = hostCapacity(configured, node.state.hosts.get(conn.host)).mismatches;
      if (mismatches.length > 0)
        this.ctx.log.warn('the host registers other resources than hosts.yaml allows', { host: conn.host, mismatches });
    }
    const registration: Registration = {
      host: conn.host,
      running: new Set(f.running.map((r) => `${r.jobId}.${r.run}`)),
      suspended: new Set(f.running.filter((r) => r.suspended === true).map((r) => `${r.jobId}.${r.run}`)),
      send: (frame) => this.send(conn, frame),
    };
    for (const l of this.registeredListeners) l(registration);
  }

  // ---- leadership, availability, lost hosts ----

  onLeadership(leader: boolean): void {
    if (leader) {
      this.liveness.leading();
      return;
    }
    // Workers must follow the new leader.
    const notLeader = this.notLeader();
    for (const c of this.workers.values()) {
      this.send(c, notLeader);
      c.ws.close(1000, 'not the leader any more');
    }
    this.workers.clear();
  }

  /** A piece of a running job's stdout from the worker of `host` (worker-peeks.ts). */
  peek(host: string, q: PeekQuery): Promise<PeekDataFrame> {
    const c = this.workers.get(host);
    const open = c !== undefined && c.registered && c.ws.readyState === c.ws.OPEN;
    return this.peeks.ask(host, q, open ? (f) => this.send(c, f) : null);
  }

  /** Hosts whose worker is registered and heard from recently. */
  availableHosts(): Set<string> {
    const now = this.ctx.now();
    const out = new Set<string>();
    for (const c of this.workers.values()) if (c.registered && now - c.lastSeen_ms <= HOST_SILENT_MS) out.add(c.host);
    return out;
  }

  /** Hosts silent for hostLost_ms or more since this node leads (host-liveness.ts). */
  lostHosts(): Set<string> {
    return this.liveness.lost(this.availableHosts());
  }

  /** Requeues the jobs running on hosts silent for hostLost_ms (host-liveness.ts). */
  requeueLostHosts(): void {
    this.liveness.requeueLost();
  }

  close(): void {
    this.events.close();
    for (const c of this.wss.clients) c.terminate();
    this.wss.close();
  }
}
