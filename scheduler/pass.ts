// One scheduling pass on the leader: every pending job, in queue priority (higher first) then submit
// order (job id), is live-merged with its profile as it is now (through aliases), placed on the
// available hosts, and on success its resources are reserved in the pass's view so that later jobs
// of the same pass see them taken. The result is the batch of dispatch decisions (each becomes a
// DispatchFact) and, for every job that cannot run, a reason a user can act on.
//
// Pure: a function of the state, the set of available hosts and the options. No clock, no I/O, no
// randomness; the same inputs give the same decisions in the same order.
//
// Before placement a job must have its dependency met (statemachine/dependency.ts: else it pends
// with the reason, and under `--dep-never kill` one that can never be met is reported), and an
// array element must fit under its array's `%N` limit (elements running plus dispatches in flight).

import type { DispatchRecord, HostTasks } from '../statemachine/dispatch-record.js';
import { buildDispatchRecord } from '../statemachine/dispatch-record.js';
import type { ClusterConfig } from '../model/config-types.js';
import type { JobSpec } from '../statemachine/facts.js';
import { liveMerge, type LiveMerge } from '../statemachine/jobs.js';
import { isRunning, type ControllerState, type Job } from '../statemachine/state.js';
import { ClusterPools, HostView } from './host-view.js';
import { DependencyEvaluator, neverReason } from '../statemachine/dependency.js';
import { arrayIdOf, elementId, isElementId } from '../model/job-id.js';
import { Placer, type Requirement } from './placement.js';

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
  /**
   * Pending jobs (an array's id for its elements) whose dependency can never be met and that asked
   * to be killed then (`--dep-never kill`): the loop proposes a `dependencyNever` control for each.
   */
  readonly dependencyNever: number[];
}

/** Distinct (profile, own values) merges one pass keeps; past it, jobs are merged without caching. */
export const MERGE_CACHE_ENTRIES_MAX = 65_536;

/**
 * The live merge of jobs that share their profile and own values, computed once per pass. Merging is
 * pure, so a shared result changes nothing; it saves the refused merge's message (about 5 µs) and the
 * accepted merge's objects when many jobs are alike (job arrays, scripted submissions). The key is
 * every own value the merge reads, each length-prefixed so that no two different jobs share one.
 */
export class MergeCache {
  private readonly byProfile = new Map<string | null, Map<string, LiveMerge>>();
  private size = 0;

  merge(config: ClusterConfig, job: Job): LiveMerge {
    let byOwn = this.byProfile.get(job.profile);
    if (byOwn === undefined) this.byProfile.set(job.profile, (byOwn = new Map()));
    const key = ownValuesKey(job.spec);
    let m = byOwn.get(key);
    if (m === undefined) {
      m = liveMerge(config, job.profile, job.spec);
      if (this.size < MERGE_CACHE_ENTRIES_MAX) {
        byOwn.set(key, m);
        this.size++;
      }
    }
    return m;
  }
}

function str(s: string | null): string {
  return s === null ? '-' : `${s.length}:${s}`;
}

function num(n: number | null | undefined): string {
  return n === null || n === undefined ? '-' : String(n);
}

/** Every JobSpec field the merge reads (resreq, tasks, env, limits, pre/post-exec), unambiguously. */
export function ownValuesKey(spec: JobSpec): string {
  const l = spec.limits;
  let k = `${str(spec.resreq)}|${num(spec.tasks)}|${str(spec.preExec)}|${str(spec.postExec)}|${num(l.runtime_s)},${num(l.memory_bytes)},${num(l.cpu_s)},${num(l.tasks)}|${spec.env.length}`;
  for (const e of spec.env) k += `|${str(e.name)}${str(e.value)}`;
  return k;
}

/** The reason of a job whose queue a configuration upgrade removed. */
export function queueNotDefinedReason(queue: string): string {
  return `queue ${queue} is not defined in queues.yaml`;
}

/**
 * Pending jobs in scheduling order: queue priority (higher first), then job id; jobs of unknown
 * queues last. Held jobs (`jobs hold`) are not scheduled: their pend reason is the hold's.
 */
export function schedulingOrder(state: ControllerState, exclude: ReadonlySet<number>): Job[] {
  const config = state.config?.cluster;
  const byPriority = new Map<number, Job[]>();
  const priorityOf = new Map<string, number>();
  if (config !== undefined) for (const q of config.queues.values()) priorityOf.set(q.name, q.priority);
  for (const job of state.jobs.values()) {
    if (job.state !== 'PEND' || job.heldBy !== null || exclude.has(job.id)) continue;
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
    return { decisions, pending, deferred, dependencyNever: [] };
  }
  // Nothing to place: no host view (O(hosts), built every period on the leader of a large site).
  if (jobs.length === 0) return { decisions, pending, deferred, dependencyNever: [] };
  const running = runningOfLimitedArrays(state, opts.exclude);
  const deps = new DependencyEvaluator(state);
  const never = new Set<number>();
  const inFlight = opts.inFlight ?? [];
  // A closed host (xceadmin hosts close) gets no new job: it is not offered, as if its worker were away.
  const open = state.closedHosts.size === 0 ? available : withoutClosed(available, state.closedHosts);
  const view = new HostView(config, state.usage, open, { inFlight, registered: state.hosts });
  const pools = new ClusterPools(config, state.usage, inFlight);
  const placer = new Placer(view, pools);
  const max = Math.max(0, opts.maxDispatches);
  const requirements = new Map<string | null, Map<string, Requirement>>();
  const merges = new MergeCache();

  for (const job of jobs) {
    if (!config.queues.has(job.queue)) {
      pending.set(job.id, queueNotDefinedReason(job.queue));
      continue;
    }
    // The array's %N first: it is the cheapest check, and under a small limit most elements stop here.
    const limited = running === null || !isElementId(job.id) ? undefined : running.get(arrayIdOf(job.id));
    if (limited !== undefined && limited.running >= limited.limit) {
      pending.set(job.id, limitReason(limited));
      continue;
    }
    const m = merges.merge(config, job);
    if (!m.ok) {
      pending.set(job.id, m.reason);
      continue;
    }
    if (job.dependency !== null && !dependencyMet(job, deps, pending, never)) continue;
    if (decisions.length >= max) {
      deferred++;
      continue;
    }
    const req = requirementOf(requirements, placer, job, m.effective.resreq);
    const placed = placer.place(req, m.effective.tasks);
    if (!placed.ok) {
      pending.set(job.id, placed.reason);
      continue;
    }
    placer.reserve(req, placed.hosts);
    if (limited !== undefined) limited.running++;
    decisions.push({
      jobId: job.id,
      runNumber: job.runNumber + 1,
      placement: placed.hosts,
      record: buildDispatchRecord(m.effective, m.hash, placed.hosts),
      schedulerHash: m.hash,
    });
  }
  return { decisions, pending, deferred, dependencyNever: [...never] };
}

/**
 * The effective resreq is a function of the (resolved) profile and the job's own -R text, and the
 * configuration is fixed for the pass: that pair names the compiled requirement (two map lookups,
 * no key string built per job).
 */
function requirementOf(
  requirements: Map<string | null, Map<string, Requirement>>,
  placer: Placer,
  job: Job,
  effective: Parameters<Placer['requirement']>[0],
): Requirement {
  let byText = requirements.get(job.profile);
  if (byText === undefined) requirements.set(job.profile, (byText = new Map()));
  const text = job.spec.resreq ?? '';
  let req = byText.get(text);
  if (req === undefined) {
    req = placer.requirement(effective);
    byText.set(text, req);
  }
  return req;
}

function limitReason(l: { readonly running: number; readonly limit: number }): string {
  return `the job array's limit is reached: ${l.running} of at most ${l.limit} elements running (%${l.limit})`;
}

/**
 * Whether the job's dependency is met; if not, its pend reason, and (never met, under
 * `--dep-never kill`) the job, or its array, in `never`.
 */
function dependencyMet(job: Job, deps: DependencyEvaluator, pending: Map<number, string>, never: Set<number>): boolean {
  const dep = job.dependency!;
  const v = deps.value(dep);
  if (v.met) return true;
  pending.set(job.id, v.final ? neverReason(v) : `waiting for dependency ${dep.resolved}`);
  if (v.final && dep.killWhenNever) never.add(isElementId(job.id) ? arrayIdOf(job.id) : job.id);
  return false;
}

/**
 * For each job array with a `%N` limit: its elements running now, counting those with a dispatch in
 * flight (`exclude`); null when no array has a limit.
 */
function runningOfLimitedArrays(
  state: ControllerState,
  exclude: ReadonlySet<number>,
): Map<number, { running: number; readonly limit: number }> | null {
  let out: Map<number, { running: number; readonly limit: number }> | null = null;
  for (const a of state.arrays.values()) {
    if (a.limit === 0) continue;
    let n = 0;
    for (const i of a.indices) {
      const id = elementId(a.id, i);
      const j = state.jobs.get(id);
      if (j !== undefined && (isRunning(j) || (j.state === 'PEND' && exclude.has(id)))) n++;
    }
    (out ??= new Map()).set(a.id, { running: n, limit: a.limit });
  }
  return out;
}

/** The available hosts that are not closed. */
function withoutClosed(available: ReadonlySet<string>, closed: ReadonlyMap<string, unknown>): Set<string> {
  const out = new Set<string>();
  for (const h of available) if (!closed.has(h)) out.add(h);
  return out;
}
