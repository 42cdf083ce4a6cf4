// The leader's intake of the workers' reports (worker-endpoint.ts hands each over): a status from
// the head host of its run is proposed with the others of its turn (StatusBatches) and acked once
// applied, one on a run that is over is acked without a proposal, one from another host is dropped
// (ForeignReports); start/kill acks from the head host go to the dispatcher.

import type { HubContext } from './hub-context.js';
import type { AckFrame, ControllerToWorkerFrame, StatusFrame } from './worker-protocol.js';
import { ForeignReports, judgeReport, StatusBatches } from './worker-reports.js';

export class ReportIntake {
  /** Statuses proposed and not yet applied, by statusId (a re-send while in flight is not proposed twice). */
  private readonly statusInFlight = new Set<string>();
  /** Head hosts' statuses of this turn of the event loop, proposed together at its end. */
  private readonly statusBatches: StatusBatches;
  private readonly ackListeners: Array<(host: string, f: AckFrame) => void> = [];
  /** Statuses and acks dropped because their host does not run the job's current run. */
  readonly foreign: ForeignReports;

  constructor(
    private readonly ctx: HubContext,
    sendTo: (host: string, frame: ControllerToWorkerFrame) => void,
  ) {
    this.foreign = new ForeignReports(ctx.log);
    this.statusBatches = new StatusBatches(ctx, {
      applied: (f) => {
        this.statusInFlight.delete(f.statusId);
        sendTo(f.host, { type: 'status-ack', statusId: f.statusId });
      },
      failed: (f) => this.statusInFlight.delete(f.statusId),
    });
  }

  /** Called for each start/kill ack from the head host of the job's current run. */
  onHeadAck(listener: (host: string, f: AckFrame) => void): void {
    this.ackListeners.push(listener);
  }

  /** A status from `host`; false when this node is not the leader (the caller redirects the worker). */
  status(host: string, f: StatusFrame, reply: (frame: ControllerToWorkerFrame) => void): boolean {
    if (this.statusInFlight.has(f.statusId)) return true;
    if (!this.ctx.node.isLeader()) return false;
    const judged = judgeReport(this.ctx.node.state, host, f.jobId, f.run);
    const about = { host, job: f.jobId, run: f.run, kind: f.kind };
    switch (judged.kind) {
      case 'head':
        // Proposed with the others of this turn; the worker gets `status-ack` once it is applied.
        this.statusInFlight.add(f.statusId);
        this.statusBatches.add(f);
        return true;
      case 'foreign':
        // Never proposed, never acked: it changes nothing, whatever the sender does next.
        this.foreign.drop('status', host, judged.head, f.jobId, f.run, f.kind);
        return true;
      case 'stale':
        // Apply would ignore it: acked without a proposal, so that the worker stops re-sending it
        // (a host back from the dead reporting on a run requeued meanwhile, say).
        this.ctx.log.debug('status on a run that is over; acked, not proposed', about);
        reply({ type: 'status-ack', statusId: f.statusId });
        return true;
      case 'unknown':
        // This node has not applied the job's dispatch (yet): the worker re-sends it.
        this.ctx.log.debug('status on a run this controller has not applied yet; the worker will re-send it', about);
        return true;
    }
  }

  /** A start/kill ack from `host`: handed on when `host` is the head host of the job's current run. */
  ack(host: string, f: AckFrame): void {
    const judged = judgeReport(this.ctx.node.state, host, f.jobId, f.run);
    if (judged.kind === 'foreign') {
      this.foreign.drop('ack', host, judged.head, f.jobId, f.run, `${f.ref} ${f.outcome}`);
      return;
    }
    // Acks on other runs change nothing (a kill of an old run after a requeue is acked so).
    if (judged.kind !== 'head') return;
    for (const l of this.ackListeners) l(host, f);
  }
}
