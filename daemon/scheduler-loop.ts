// The leader's scheduler loop: after a grace period that lets workers reconnect to a new leader (so
// nothing is dispatched onto a host it cannot see yet), coalesced and paced passes of
// scheduler/pass.ts over the pending jobs (scheduler-pacing.ts: at most a quarter of the leader's time), each decision proposed as a DispatchFact (the frozen record and the hash it
// merged with; all of a pass's decisions in one BatchFact), and the pend reason of each job a pass
// could not place.

import type { HubContext } from './hub-context.js';
import { WORKER_HEARTBEAT_MS } from './worker-endpoint.js';
import type { ApplyResult, DispatchFact, FactBody } from '../statemachine/facts.js';
import type { DispatchRecord } from '../statemachine/dispatch-record.js';
import { schedulePass, type Decision } from '../scheduler/pass.js';
import { isRunning } from '../statemachine/state.js';
import { PassPacer } from './scheduler-pacing.js';
export { SCHEDULER_PASS_INTERVAL_MS_MIN, SCHEDULER_PASS_SHARE_MAX } from './scheduler-pacing.js';

/** A new leader waits this long for workers to reconnect before its first scheduling pass. */
export const SCHEDULER_GRACE_MS_DEFAULT = 2 * WORKER_HEARTBEAT_MS;
/** A scheduling pass runs at least this often on the leader (and on every relevant event). */
export const SCHEDULER_PERIOD_MS = 1_000;
/** The reason every pending job gets while no worker is connected to the leader. */
export const NO_WORKER_REASON = 'no worker is connected to the leader controller';
/** Dispatch decisions proposed by one pass, and in flight at once. */
export const DISPATCHES_PER_PASS_MAX = 2_000;

/**
 * Decisions per BatchFact: a pass's decisions go in as few facts as this allows (a record is about
 * 1 KiB, so a fact stays far below the log's entry limit, wal/limits.ts ENTRY_DATA_BYTES_MAX).
 */
export const DISPATCHES_PER_FACT_MAX = 256;

/** Where the loop learns which hosts can take jobs now (the worker endpoint). */
export interface AvailableHosts {
  availableHosts(): Set<string>;
}

/** One pass: how long it took (placement and proposing its decisions) and how many jobs it placed. */
export interface PassTiming {
  readonly duration_ms: number;
  readonly decisions: number;
}

export interface SchedulerLoopOptions {
  readonly schedulerGrace_ms?: number;
}

export class SchedulerLoop {
  /** Jobs with a dispatch proposed and not yet applied, with the record (what it will hold). */
  private readonly dispatchInFlight = new Map<number, DispatchRecord>();
  /** The last pass's reason for each pending job it could not place (leader only, not replicated). */
  private pendReasons = new Map<number, string>();
  /** `dependencyNever` controls proposed and not yet applied. */
  private readonly neverInFlight = new Set<number>();
  private timer: NodeJS.Timeout | null = null;
  private from_ms = Infinity;
  /** A pass is scheduled (it takes every request made before it starts). */
  private passScheduled = false;
  private readonly pacer = new PassPacer();
  private noWorkers = false;
  private readonly tickListeners: Array<() => void> = [];
  private readonly passListeners: Array<(p: PassTiming) => void> = [];
  passes = 0;

  constructor(
    private readonly ctx: HubContext,
    private readonly hosts: AvailableHosts,
    private readonly opts: SchedulerLoopOptions,
  ) {}

  /** Called every SCHEDULER_PERIOD_MS on the leader, before the periodic pass is requested. */
  onTick(listener: () => void): void {
    this.tickListeners.push(listener);
  }

  /** Called after each pass with how long it took (for the metrics). */
  onPass(listener: (p: PassTiming) => void): void {
    this.passListeners.push(listener);
  }

  onLeadership(leader: boolean): void {
    const grace_ms = this.opts.schedulerGrace_ms ?? SCHEDULER_GRACE_MS_DEFAULT;
    if (leader) {
      this.from_ms = this.ctx.now() + grace_ms;
      this.pacer.reset();
      if (this.timer === null) {
        this.timer = setInterval(() => {
          for (const l of this.tickListeners) l();
          this.requestPass();
        }, SCHEDULER_PERIOD_MS);
      }
      this.ctx.log.info('scheduler starts after the worker grace period', { grace_ms });
    } else {
      if (this.timer !== null) clearInterval(this.timer);
      this.timer = null;
      this.from_ms = Infinity;
    }
  }

  /** After every applied batch: a pass when something that changes placement was applied. */
  onApplied(results: ReadonlyArray<{ index: number; result: ApplyResult }>): void {
    if (!this.ctx.node.isLeader()) return;
    const state = this.ctx.node.state;
    let pass = false;
    for (const { result } of results) {
      switch (result.kind) {
        case 'controlled':
          if (state.jobs.get(result.jobId) !== undefined || state.arrays.has(result.jobId)) pass = true;
          break;
        case 'submitted':
        case 'modified':
        case 'declined':
        case 'configApplied':
          pass = true;
          break;
        case 'statusApplied': {
          const job = state.jobs.get(result.jobId);
          if (job !== undefined && !isRunning(job)) pass = true;
          break;
        }
        default:
          break;
      }
    }
    if (pass) this.requestPass();
  }

  /** Why the scheduler could not place a pending job in its last pass (this node must lead). */
  pendReason(jobId: number): string | undefined {
    if (!this.ctx.node.isLeader()) return undefined;
    return this.noWorkers ? NO_WORKER_REASON : this.pendReasons.get(jobId);
  }

  requestPass(): void {
    if (!this.ctx.node.isLeader() || this.ctx.now() < this.from_ms || this.passScheduled) return;
    // Coalesce: a burst of submits or statuses asks for one pass, not one each; paced by the last pass's length.
    this.passScheduled = true;
    const run = (): void => {
      this.passScheduled = false;
      this.runPass();
    };
    const wait_ms = this.pacer.wait_ms(this.ctx.now());
    if (wait_ms === 0) setImmediate(run);
    else setTimeout(run, wait_ms);
  }

  private runPass(): void {
    const node = this.ctx.node;
    try {
      if (!node.isLeader() || node.state.config === null) return;
      const budget = DISPATCHES_PER_PASS_MAX - this.dispatchInFlight.size;
      if (budget <= 0) return;
      const available = this.hosts.availableHosts();
      // With no worker there is nothing to place: skip the O(pending) pass; the reason is known.
      this.noWorkers = available.size === 0;
      if (this.noWorkers) {
        this.pendReasons = new Map();
        return;
      }
      const start_ms = this.ctx.now();
      const inFlight = new Set(this.dispatchInFlight.keys());
      const t0 = performance.now();
      const pass = schedulePass(node.state, available, {
        maxDispatches: budget,
        exclude: inFlight,
        inFlight: [...this.dispatchInFlight.values()],
      });
      this.passes++;
      this.pendReasons = pass.pending;
      for (let i = 0; i < pass.decisions.length; i += DISPATCHES_PER_FACT_MAX)
        this.proposeDispatches(pass.decisions.slice(i, i + DISPATCHES_PER_FACT_MAX));
      for (const id of pass.dependencyNever) this.proposeDependencyNever(id);
      const timing = { duration_ms: performance.now() - t0, decisions: pass.decisions.length };
      this.pacer.ran(start_ms, start_ms + timing.duration_ms);
      for (const l of this.passListeners) l(timing);
    } catch (err) {
      this.ctx.log.error('scheduling pass failed', { error: (err as Error).message, stack: (err as Error).stack });
    }
  }

  /** A pass's decisions as one fact: a DispatchFact for one, a BatchFact of them for more. */
  private proposeDispatches(decisions: readonly Decision[]): void {
    const facts: DispatchFact[] = decisions.map((d) => {
      this.dispatchInFlight.set(d.jobId, d.record);
      return {
        kind: 'dispatch',
        jobId: d.jobId,
        runNumber: d.runNumber,
        placement: d.placement,
        record: d.record,
        schedulerHash: d.schedulerHash,
      };
    });
    const done = (): void => {
      for (const d of decisions) this.dispatchInFlight.delete(d.jobId);
    };
    const body: FactBody = facts.length === 1 ? facts[0]! : { kind: 'batch', dispatches: facts, statuses: [] };
    this.ctx.propose(body).then((r) => {
      done();
      for (const x of r.kind === 'batch' ? r.results : [r])
        if (x.kind === 'declined')
          this.ctx.log.info('dispatch declined; the job stays pending', {
            job: x.jobId,
            code: x.code,
            message: x.message,
          });
    }, done);
  }

  /** Kills a job (or an array's pending elements) whose dependency can never be met (`--dep-never kill`); apply checks again. */
  private proposeDependencyNever(jobId: number): void {
    if (this.neverInFlight.has(jobId)) return;
    this.neverInFlight.add(jobId);
    this.ctx.propose({ kind: 'control', jobId, action: 'dependencyNever', user: '' }).then(
      (r) => {
        this.neverInFlight.delete(jobId);
        if (r.kind === 'controlled')
          this.ctx.log.info('killed a job whose dependency can never be met', { job: jobId });
      },
      () => this.neverInFlight.delete(jobId),
    );
  }

  close(): void {
    if (this.timer !== null) clearInterval(this.timer);
  }
}
