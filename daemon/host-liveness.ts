// Which worker hosts the leader has heard from, and which are gone for good: a host silent for
// the host-lost timeout (`hostLost_ms`, since it was last heard or since this node leads) is lost,
// and the jobs running on it are requeued to run elsewhere.

import { isRunning } from '../statemachine/state.js';
import type { HubContext } from './hub-context.js';

export class HostLiveness {
  /** Last time each host was heard from (kept after it disconnects); reset when this node starts leading. */
  private readonly seen_ms = new Map<string, number>();
  private leaderSince_ms = 0;
  private readonly requeueInFlight = new Set<number>();

  /** `lost_ms` <= 0: no host is ever lost. */
  constructor(
    private readonly ctx: HubContext,
    private readonly lost_ms: number,
  ) {}

  heard(host: string, at_ms: number): void {
    this.seen_ms.set(host, at_ms);
  }

  /** This node has just become the leader: every host's silence counts from now. */
  leading(): void {
    this.seen_ms.clear();
    this.leaderSince_ms = this.ctx.now();
  }

  /**
   * Hosts of hosts.yaml not in `available` and silent for lost_ms or more (since this node leads):
   * gone for good as far as the leader knows (requeueLost requeues their running jobs). Empty on a
   * follower or with the timeout off.
   */
  lost(available: ReadonlySet<string>): Set<string> {
    const out = new Set<string>();
    const hosts = this.ctx.node.state.config?.cluster.hosts;
    if (this.lost_ms <= 0 || !this.ctx.node.isLeader() || hosts === undefined) return out;
    const now = this.ctx.now();
    for (const host of hosts.keys()) {
      if (available.has(host)) continue;
      if (now - (this.seen_ms.get(host) ?? this.leaderSince_ms) >= this.lost_ms) out.add(host);
    }
    return out;
  }

  /**
   * A host that has been silent for lost_ms is gone for good: each job running on it is requeued
   * (back to PEND; the next dispatch re-reads its profile, and it runs elsewhere). Should the host
   * come back, its worker is told to kill the old run when it registers (reconcile). The requeue
   * is proposed on the owner's behalf, so it passes the owner's own RBAC check in apply.
   */
  requeueLost(): void {
    if (this.lost_ms <= 0 || !this.ctx.node.isLeader()) return;
    const now = this.ctx.now();
    for (const job of this.ctx.node.state.jobs.values()) {
      if (!isRunning(job) || job.record === null || this.requeueInFlight.has(job.id)) continue;
      const host = job.record.hosts[0]?.host;
      if (host === undefined) continue;
      const seen = this.seen_ms.get(host) ?? this.leaderSince_ms;
      if (now - seen < this.lost_ms) continue;
      this.requeueInFlight.add(job.id);
      this.ctx.log.warn('host lost: requeueing its job', {
        host,
        job: job.id,
        run: job.runNumber,
        silent_ms: now - seen,
      });
      this.ctx.propose({ kind: 'control', jobId: job.id, action: 'requeue', user: job.user }).then(
        () => this.requeueInFlight.delete(job.id),
        () => this.requeueInFlight.delete(job.id),
      );
    }
  }
}
