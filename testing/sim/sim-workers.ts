// The simulator playing the leader's scheduler and the workers: every few milliseconds, on the
// node that leads, a few pending jobs are dispatched (rightly or wrongly, workload.ts), a few
// running ones report a status, a pending job whose dependency can never be met under
// `--dep-never kill` is killed, and now and then finished jobs are cleaned: each a fact the leader
// proposes. Like the real scheduler it mostly skips held jobs, jobs waiting on a dependency and
// array elements over their array's %N, but not always (apply must cope with a wrong scheduler).

import { encodeFact } from '../../statemachine/facts-codec.js';
import type { Fact } from '../../statemachine/facts.js';
import { DependencyEvaluator } from '../../statemachine/dependency.js';
import { isRunning, type ControllerState, type Job } from '../../statemachine/state.js';
import { arrayIdOf, isElementId } from '../../model/job-id.js';
import type { SimConfig } from './sim-config.js';
import type { SimNode } from './sim-types.js';
import type { SimWorld } from './sim-world.js';
import { cleanFor, dispatchFor, statusFor } from './leader-facts.js';

/** Most jobs one CleanFact of the simulator names. */
const SIM_CLEAN_JOBS_MAX = 4;
/** Chance per scheduler pass that the leader cleans finished jobs. */
const SIM_CLEAN_CHANCE = 0.12;

export class SimWorkers {
  /** Jobs with a dispatch or a status proposed and not settled yet. */
  private readonly dispatching = new Set<number>();
  private readonly reporting = new Set<number>();
  private readonly killing = new Set<number>();
  private cleaning = false;

  constructor(
    private readonly w: SimWorld,
    private readonly config: SimConfig,
  ) {}

  /** Whether a proposal of theirs is still waiting. */
  get busy(): boolean {
    return this.dispatching.size > 0 || this.reporting.size > 0 || this.killing.size > 0 || this.cleaning;
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
    const deps = new DependencyEvaluator(state);
    const running = runningByArray(state);
    for (const job of state.jobs.values()) {
      if (budget === 0) break;
      if (job.state === 'PEND' && !this.dispatching.has(job.id) && !this.killing.has(job.id)) {
        const dep = job.dependency === null ? undefined : deps.value(job.dependency);
        if (dep !== undefined && job.dependency!.killWhenNever && dep.final && !dep.met) {
          budget--;
          this.killing.add(job.id);
          const body = { kind: 'control', jobId: job.id, action: 'dependencyNever', user: '' } as const;
          this.leaderFact(l, body, `dependencyNever job ${job.id}`, now, () => this.killing.delete(job.id));
          continue;
        }
        const waits = job.heldBy !== null || (dep !== undefined && !dep.met) || overLimit(state, job, running);
        if (waits && this.w.rng.chance(0.9)) continue;
        if (!this.w.rng.chance(0.6)) continue;
        const d = dispatchFor(job, state, this.w.rng, this.config);
        if (d === undefined) continue;
        budget--;
        this.dispatching.add(job.id);
        this.leaderFact(l, d.body, d.label, now, () => this.dispatching.delete(job.id));
      } else if (isRunning(job) && !this.reporting.has(job.id) && this.w.rng.chance(0.4)) {
        const s = statusFor(job, this.w.rng, now);
        budget--;
        this.reporting.add(job.id);
        this.leaderFact(l, s.body, s.label, now, () => this.reporting.delete(job.id));
      }
    }
    if (!this.cleaning && this.w.rng.chance(SIM_CLEAN_CHANCE)) {
      const c = cleanFor(state, this.w.rng, SIM_CLEAN_JOBS_MAX);
      if (c !== undefined && c.body.kind === 'clean') {
        // What may leave the state: the final checks do not look for these (nor their arrays).
        for (const id of c.body.jobIds) this.w.cleanProposed.add(isElementId(id) ? arrayIdOf(id) : id);
        this.cleaning = true;
        this.leaderFact(l, c.body, c.label, now, () => (this.cleaning = false));
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
        else if (r.kind === 'cleaned') this.w.stats.cleaned += r.count;
        this.w.log(`${label}: ${r.kind}${r.kind === 'declined' || r.kind === 'ignored' ? ` (${r.message})` : ''}`);
      },
      () => settled(),
    );
  }
}

/** Running (or suspended) elements per array id. */
function runningByArray(state: ControllerState): Map<number, number> {
  const m = new Map<number, number>();
  for (const j of state.jobs.values())
    if (isRunning(j) && isElementId(j.id)) m.set(arrayIdOf(j.id), (m.get(arrayIdOf(j.id)) ?? 0) + 1);
  return m;
}

/** An array element whose array already runs its %N elements. */
function overLimit(state: ControllerState, job: Job, running: ReadonlyMap<number, number>): boolean {
  if (!isElementId(job.id)) return false;
  const a = state.arrays.get(arrayIdOf(job.id));
  return a !== undefined && a.limit > 0 && (running.get(a.id) ?? 0) >= a.limit;
}
