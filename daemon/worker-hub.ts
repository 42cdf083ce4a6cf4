// The worker hub: the leader's side of the workers, put together from three parts that share a
// HubContext (hub-context.ts) and hear of each other through listener lists:
//  - the worker endpoint (worker-endpoint.ts): `/worker`, registration and host checks, frames in
//    and out, heartbeats, statuses and their acks (worker-reports.ts), hosts lost for good;
//  - the scheduler loop (scheduler-loop.ts): passes on the leader after a grace period, pend reasons;
//  - the dispatcher (dispatcher.ts): start/kill frames, refused starts, jobs no worker runs ended.
// `attachHub` subscribes a hub to a controller's leadership and applied batches.

import type { RegistrationGateStats } from './registration-gate.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ControllerNode } from './controller-node.js';
import type { Logger } from './log.js';
import type { ChallengeBook } from './handshake.js';
import { hubContext } from './hub-context.js';
import { WorkerEndpoint } from './worker-endpoint.js';
import type { WorkerFrameCounts } from './worker-frame-counts.js';
import type { PeekDataFrame } from './worker-protocol.js';
import { SchedulerLoop } from './scheduler-loop.js';
import { Dispatcher } from './dispatcher.js';
import { judgeReport, type ReportJudgement } from './worker-reports.js';
import type { ApplyResult } from '../statemachine/facts.js';

export {
  WORKER_HEARTBEAT_MS,
  HOST_SILENT_MS,
  HOST_LOST_MS_DEFAULT,
  hostNotConfiguredReason,
} from './worker-endpoint.js';
export {
  SCHEDULER_GRACE_MS_DEFAULT,
  SCHEDULER_PERIOD_MS,
  SCHEDULER_PASS_INTERVAL_MS_MIN,
  NO_WORKER_REASON,
  DISPATCHES_PER_PASS_MAX,
} from './scheduler-loop.js';
export { REFUSED_STARTS_MAX } from './dispatcher.js';
export { FOREIGN_REPORTS_LOGGED_MAX, type ReportJudgement } from './worker-reports.js';

export interface WorkerHubOptions {
  /** The controllers' worker root (deriveClusterKeys(...).workerRoot). */
  readonly workerRoot: Uint8Array;
  /** This controller's nonces for handshakes (GET /challenge). */
  readonly challenges: ChallengeBook;
  readonly log: Logger;
  readonly schedulerGrace_ms?: number;
  /** After this long without hearing from a host, requeue its running jobs (0: never). */
  readonly hostLost_ms?: number;
  readonly now?: () => number;
}

export class WorkerHub {
  readonly endpoint: WorkerEndpoint;
  readonly scheduler: SchedulerLoop;
  readonly dispatcher: Dispatcher;

  constructor(
    private readonly node: ControllerNode,
    opts: WorkerHubOptions,
  ) {
    const ctx = hubContext(node, opts.log, opts.now ?? Date.now);
    this.endpoint = new WorkerEndpoint(ctx, {
      workerRoot: opts.workerRoot,
      challenges: opts.challenges,
      hostLost_ms: opts.hostLost_ms,
    });
    this.scheduler = new SchedulerLoop(ctx, this.endpoint, { schedulerGrace_ms: opts.schedulerGrace_ms });
    this.dispatcher = new Dispatcher(ctx, this.endpoint);
    this.endpoint.onRegistered((r) => {
      this.dispatcher.reconcile(r);
      this.scheduler.requestPass();
    });
    this.endpoint.reports.onHeadAck((host, f) => this.dispatcher.onAck(host, f));
    this.scheduler.onTick(() => this.endpoint.requeueLostHosts());
  }

  /** Scheduling passes run by this node. */
  get passes(): number {
    return this.scheduler.passes;
  }
  /** Statuses dropped because their host does not run the job's current run. */
  get foreignStatuses(): number {
    return this.endpoint.reports.foreign.statuses;
  }
  /** Start/kill acks dropped because their host does not run the job's current run. */
  get foreignAcks(): number {
    return this.endpoint.reports.foreign.acks;
  }
  /** Registrations refused (a host hosts.yaml does not list). */
  get refusedRegistrations(): number {
    return this.endpoint.refusedRegistrations;
  }

  /** Frames received from workers and sent to them, by type (GET /metrics). */
  get frames(): WorkerFrameCounts {
    return this.endpoint.frames;
  }

  /** Worker handshakes and registrations waiting, and workers answered `busy` (registration-gate.ts). */
  registrationStats(): RegistrationGateStats {
    return this.endpoint.registrationStats();
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.endpoint.handleUpgrade(req, socket, head);
  }

  /** A worker's challenge request on a controller that is not the leader: answered 421 (worker-redirect.ts). */
  answerMisdirectedChallenge(req: IncomingMessage, res: ServerResponse): boolean {
    return this.endpoint.answerMisdirectedChallenge(req, res);
  }

  /** Who may report on (jobId, run) by this node's applied state (see ReportJudgement). */
  judgeReport(host: string, jobId: number, run: number): ReportJudgement {
    return judgeReport(this.node.state, host, jobId, run);
  }

  onLeadership(leader: boolean): void {
    this.dispatcher.onLeadership(leader);
    this.endpoint.onLeadership(leader);
    this.scheduler.onLeadership(leader);
  }

  /** Called after every applied batch: dispatch what was dispatched, kill what must stop, then a pass if one is due. */
  onApplied(results: ReadonlyArray<{ index: number; result: ApplyResult }>): void {
    if (results.some((r) => r.result.kind === 'credentialApplied')) this.endpoint.dropRevoked();
    if (!this.node.isLeader()) return;
    this.dispatcher.onApplied(results);
    this.scheduler.onApplied(results);
  }

  /** Why the scheduler could not place a pending job in its last pass (this node must lead). */
  schedulerPendReason(jobId: number): string | undefined {
    return this.scheduler.pendReason(jobId);
  }

  /** Hosts whose worker is registered and heard from recently. */
  availableHosts(): Set<string> {
    return this.endpoint.availableHosts();
  }

  /** Hosts of hosts.yaml silent for the host-lost timeout (worker-endpoint.ts lostHosts). */
  lostHosts(): Set<string> {
    return this.endpoint.lostHosts();
  }

  /** A piece of a running job's stdout from the worker of `host` (worker-endpoint.ts peek). */
  peek(host: string, q: { jobId: number; run: number; offset?: number; maxBytes: number }): Promise<PeekDataFrame> {
    return this.endpoint.peek(host, q);
  }

  requestPass(): void {
    this.scheduler.requestPass();
  }

  close(): void {
    this.scheduler.close();
    this.endpoint.close();
  }
}

/** Wires a hub into a controller (`xcectld` calls this unless --no-scheduler). */
export function attachHub(
  node: ControllerNode,
  keys: { workerRoot: Uint8Array; challenges: ChallengeBook },
  opts: { schedulerGrace_ms?: number; hostLost_ms?: number } = {},
): WorkerHub {
  const hub = new WorkerHub(node, { ...keys, log: node.log.child({ component: 'scheduler' }), ...opts });
  node.onLeadership((leader) => hub.onLeadership(leader));
  node.onApplied((results) => hub.onApplied(results));
  return hub;
}
