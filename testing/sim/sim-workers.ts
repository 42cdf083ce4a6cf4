// The simulator playing the leader's scheduler and the workers: every few milliseconds, on the
// node that leads, a few pending jobs are dispatched (rightly or wrongly, workload.ts) and a few
// running ones report a status, each as a fact the leader proposes.

import { encodeFact } from '../../statemachine/facts-codec.js';
import type { Fact } from '../../statemachine/facts.js';
import type { SimConfig } from './sim-config.js';
import type { SimNode } from './sim-types.js';
import type { SimWorld } from './sim-world.js';
import { dispatchFor, statusFor } from './workload.js';

export class SimWorkers {
  /** Jobs with a dispatch or a status proposed and not settled yet. */
  private readonly dispatching = new Set<number>();
  private readonly reporting = new Set<number>();

  constructor(
    private readonly w: SimWorld,
    private readonly config: SimConfig,
  ) {}

  /** Whether a proposal of theirs is still waiting. */
  get busy(): boolean {
    return this.dispatching.size > 0 || this.reporting.size > 0;
  }

  /** One scheduler pass on the leader (and the next one scheduled, until healing). */
  pass(): void {
    if (this.w.healed) return;
    this.w.sched.after(this.w.rng.intBetween(15, 60), 'scheduler', () => this.pass());
    const l = this.w.leader();
    if (l === undefined) return;
    const state = l.core!.state;
    const now = l.clock!.now();
    let budget = this.w.rng.intBetween(1, 4);
    for (const job of state.jobs.values()) {
      if (budget === 0) break;
      if (job.state === 'PEND' && !this.dispatching.has(job.id) && this.w.rng.chance(0.6)) {
        const d = dispatchFor(job, state, this.w.rng, this.config);
        if (d === undefined) continue;
        budget--;
        this.dispatching.add(job.id);
        this.leaderFact(l, d.body, d.label, now, () => this.dispatching.delete(job.id));
      } else if (job.state === 'RUN' && !this.reporting.has(job.id) && this.w.rng.chance(0.4)) {
        const s = statusFor(job, this.w.rng, now);
        budget--;
        this.reporting.add(job.id);
        this.leaderFact(l, s.body, s.label, now, () => this.reporting.delete(job.id));
      }
    }
  }

  private leaderFact(l: SimNode, body: Fact['body'], label: string, timeMs: number, settled: () => void): void {
    this.w.log(`n${l.id} proposes ${label}`);
    l.core!.propose(encodeFact({ clientId: null, sequence: 0, timeMs, body })).then(
      (r) => {
        settled();
        if (r.kind === 'dispatched') this.w.stats.dispatched++;
        else if (r.kind === 'declined') this.w.stats.declined++;
        else if (r.kind === 'statusApplied') this.w.stats.finished++;
        this.w.log(`${label}: ${r.kind}${r.kind === 'declined' || r.kind === 'ignored' ? ` (${r.message})` : ''}`);
      },
      () => settled(),
    );
  }
}
