// One scheduling pass on the leader: every pending job, in queue priority (higher first) then submit
// order (job id), is live-merged with its profile as it is now (through aliases), placed on the
// available hosts, and on success its resources are reserved in the pass's view so that later jobs
// of the same pass see them taken. The result is the batch of dispatch decisions (each becomes a
// DispatchFact) and, for every job that cannot run, a reason a user can act on.
//
// Pure: a function of the state, the set of available hosts and the options. No clock, no I/O, no
// randomness; the same inputs give the same decisions in the same order.

import type { DispatchRecord, HostTasks } from '../../statemachine/dispatch-record.js';
import { buildDispatchRecord } from '../../statemachine/dispatch-record.js';
import { liveMerge } from '../../statemachine/jobs.js';
import type { ControllerState, Job } from '../../statemachine/state.js';
import { ClusterPools, HostView } from './host-view.js';
import { Placer } from './placement.js';

export interface PassOptions {
  /** Most decisions one pass returns (the batch the loop proposes); jobs after it wait for the next pass. */
  readonly maxDispatches: number;
  /** Jobs with a dispatch already in flight (proposed, not yet applied): not considered. */
  readonly exclude: ReadonlySet<number>;
  /**
   * The records of dispatches proposed but not yet applied: what they hold is not in
   * `state.usage` yet, so the pass takes it from the view first. Omit when none are in flight.
   */
  readonly inFlight?: readonly DispatchRecord[];
}

export interface Decision {
  readonly jobId: number;
  /** The run this dispatch starts: job.runNumber + 1. */
  readonly runNumber: number;
  /** Hosts in the order chosen (the first is the first execution host). */
  readonly placement: HostTasks[];
  readonly record: DispatchRecord;
  /** The profile hash the pass merged with (null for a job recorded before profiles). */
  readonly schedulerHash: string | null;
}

export interface PassResult {
  /** In the order decided (priority, then job id); propose them in this order. */
  readonly decisions: Decision[];
  /** Every considered job that cannot run now → why (the live merge's reason or the placement's). */
  readonly pending: Map<number, string>;
  /** Jobs that merged fine but were not placed because `maxDispatches` was reached (no entry in `pending`). */
  readonly deferred: number;
}

/** The reason of a job whose queue a configuration upgrade removed. */
export function queueNotDefinedReason(queue: string): string {
  return `queue ${queue} is not defined in queues.yaml`;
}

/** Pending jobs in scheduling order: queue priority (higher first), then job id; jobs of unknown queues last. */
export function schedulingOrder(state: ControllerState, exclude: ReadonlySet<number>): Job[] {
  const config = state.config?.cluster;
  const byPriority = new Map<number, Job[]>();
  const priorityOf = new Map<string, number>();
  if (config !== undefined) for (const q of config.queues.values()) priorityOf.set(q.name, q.priority);
  for (const job of state.jobs.values()) {
    if (job.state !== 'PEND' || exclude.has(job.id)) continue;
    const p = priorityOf.get(job.queue) ?? -Infinity;
    let list = byPriority.get(p);
    if (list === undefined) byPriority.set(p, (list = []));
    list.push(job); // state.jobs iterates in id order
  }
  const priorities = [...byPriority.keys()].sort((a, b) => b - a);
  if (priorities.length === 1) return byPriority.get(priorities[0] as number)!;
  const out: Job[] = [];
  for (const p of priorities) for (const j of byPriority.get(p)!) out.push(j);
  return out;
}

/** Runs one scheduling pass. See the file comment; `available` names hosts whose worker is connected and heartbeating. */
export function schedulePass(state: ControllerState, available: ReadonlySet<string>, opts: PassOptions): PassResult {
  const decisions: Decision[] = [];
  const pending = new Map<number, string>();
  let deferred = 0;
  const config = state.config?.cluster ?? null;
  const jobs = schedulingOrder(state, opts.exclude);
  if (config === null) {
    for (const j of jobs) pending.set(j.id, 'the cluster has no configuration yet');
    return { decisions, pending, deferred };
  }
  const inFlight = opts.inFlight ?? [];
  const view = new HostView(config, state.usage, available, { inFlight });
  const pools = new ClusterPools(config, state.usage, inFlight);
  const placer = new Placer(view, pools);
  const max = Math.max(0, opts.maxDispatches);

  for (const job of jobs) {
    if (!config.queues.has(job.queue)) {
      pending.set(job.id, queueNotDefinedReason(job.queue));
      continue;
    }
    const m = liveMerge(config, job.profile, job.spec);
    if (!m.ok) {
      pending.set(job.id, m.reason);
      continue;
    }
    if (decisions.length >= max) {
      deferred++;
      continue;
    }
    // The effective resreq is a function of the (resolved) profile and the job's own -R text, and
    // the configuration is fixed for the pass: that pair names the compiled requirement.
    const key = `${job.profile ?? '\u0001'}\u0000${job.spec.resreq ?? ''}`;
    const req = placer.requirement(m.effective.resreq, key);
    const placed = placer.place(req, m.effective.tasks);
    if (!placed.ok) {
      pending.set(job.id, placed.reason);
      continue;
    }
    placer.reserve(req, placed.hosts);
    decisions.push({
      jobId: job.id,
      runNumber: job.runNumber + 1,
      placement: placed.hosts,
      record: buildDispatchRecord(m.effective, m.hash, placed.hosts),
      schedulerHash: m.hash,
    });
  }
  return { decisions, pending, deferred };
}
