// One scheduling pass on the leader: every pending job, in queue priority (higher first) then submit
// order (job id), is live-merged with its profile as it is now (through aliases), placed on the
// available hosts, and on success its resources are reserved in the pass's view so that later jobs
// of the same pass see them taken. The result is the batch of dispatch decisions (each becomes a
// DispatchFact) and, for every job that cannot run, a reason a user can act on.
//
// Pure: a function of the state, the set of available hosts and the options. No clock, no I/O, no
// randomness; the same inputs give the same decisions in the same order.

import type { DispatchRecord, HostTasks } from '../statemachine/dispatch-record.js';
import { buildDispatchRecord } from '../statemachine/dispatch-record.js';
import type { ClusterConfig } from '../model/config-types.js';
import type { JobSpec } from '../statemachine/facts.js';
import { liveMerge, type LiveMerge } from '../statemachine/jobs.js';
import type { ControllerState, Job } from '../statemachine/state.js';
import { ClusterPools, HostView } from './host-view.js';
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
  const view = new HostView(config, state.usage, available, { inFlight, registered: state.hosts });
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
    const m = merges.merge(config, job);
    if (!m.ok) {
      pending.set(job.id, m.reason);
      continue;
    }
    if (decisions.length >= max) {
      deferred++;
      continue;
    }
    // The effective resreq is a function of the (resolved) profile and the job's own -R text, and
    // the configuration is fixed for the pass: that pair names the compiled requirement (two map
    // lookups, no key string built per job).
    let byText = requirements.get(job.profile);
    if (byText === undefined) requirements.set(job.profile, (byText = new Map()));
    const text = job.spec.resreq ?? '';
    let req = byText.get(text);
    if (req === undefined) {
      req = placer.requirement(m.effective.resreq);
      byText.set(text, req);
    }
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
