// The leader's intake of the workers' reports (worker-endpoint.ts hands each over, those of a
// `reports` frame together): a status from the head host of its run is proposed with the others of
// its turn (StatusBatches) and acked once applied (the statuses of one apply together per worker),
// one on a run that is over is acked without a proposal, one from another host is dropped
// (ForeignReports); start/kill acks from the head host go to the dispatcher.

import type { HubContext } from './hub-context.js';
import type { AckFrame, StatusFrame } from './worker-protocol.js';
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
    /** Acks statuses to the worker of `host` (one `status-acks` frame, or one `status-ack` each: worker-endpoint.ts). */
    ackStatuses: (host: string, statusIds: string[]) => void,
  ) {
    this.foreign = new ForeignReports(ctx.log);
    this.statusBatches = new StatusBatches(ctx, {
      // The statuses one apply committed, acked together per worker.
      applied: (frames) => {
        const byHost = new Map<string, string[]>();
        for (const f of frames) {
          this.statusInFlight.delete(f.statusId);
          const ids = byHost.get(f.host);
          if (ids === undefined) byHost.set(f.host, [f.statusId]);
          else ids.push(f.statusId);
        }
        for (const [host, ids] of byHost) ackStatuses(host, ids);
      },
      failed: (frames) => {
        for (const f of frames) this.statusInFlight.delete(f.statusId);
      },
    });
  }

  /** Called for each start/kill ack from the head host of the job's current run. */
  onHeadAck(listener: (host: string, f: AckFrame) => void): void {
    this.ackListeners.push(listener);
  }

  /**
   * The statuses of one frame from `host`, in order; false when this node is not the leader (the
   * caller redirects the worker). Those on runs that are over are acked at once, together, with `ackNow`.
   */
  statuses(host: string, frames: readonly StatusFrame[], ackNow: (statusIds: string[]) => void): boolean {
    const over: string[] = [];
    let leads: boolean | null = null;
    for (const f of frames) {
      if (this.statusInFlight.has(f.statusId)) continue;
      leads ??= this.ctx.node.isLeader();
      if (!leads) return false;
      if (this.isOver(host, f)) over.push(f.statusId);
    }
    if (over.length > 0) ackNow(over);
    return true;
  }

  /** Takes one status from `host` (this node leads); true when its run is over (to be acked, not proposed). */
  private isOver(host: string, f: StatusFrame): boolean {
    const judged = judgeReport(this.ctx.node.state, host, f.jobId, f.run);
    const about = { host, job: f.jobId, run: f.run, kind: f.kind };
    switch (judged.kind) {
      case 'head':
        // Proposed with the others of this turn; the worker gets `status-ack` once it is applied.
        this.statusInFlight.add(f.statusId);
        this.statusBatches.add(f);
        return false;
      case 'foreign':
        // Never proposed, never acked: it changes nothing, whatever the sender does next.
        this.foreign.drop('status', host, judged.head, f.jobId, f.run, f.kind);
        return false;
      case 'stale':
        // Apply would ignore it: acked without a proposal, so that the worker stops re-sending it
        // (a host back from the dead reporting on a run requeued meanwhile, say).
        this.ctx.log.debug('status on a run that is over; acked, not proposed', about);
        return true;
      case 'unknown':
        // This node has not applied the job's dispatch (yet): the worker re-sends it.
        this.ctx.log.debug('status on a run this controller has not applied yet; the worker will re-send it', about);
        return false;
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
