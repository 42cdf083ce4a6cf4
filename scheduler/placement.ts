// Placement: which hosts run a job's tasks, honouring its effective resource requirement.
//
//   select[...]    only available hosts that satisfy it (select-eval.ts)
//   slots          one task per slot; never more tasks on a host than it has free slots
//   rusage[...]    host-scoped items (mem, gpu) reserved per task on each host; cluster-scoped
//                  items (licenses) once per job from the pool (statemachine/usage.ts's rule)
//   span[ptile=N]  N tasks on each host, the last host may have fewer
//   span[hosts=N]  at most N hosts (`hosts=1`: all tasks on one host); with ptile: ceil(tasks/N)
//                  hosts of ptile tasks, no more than `hosts`
//   same[a:b]      all hosts share the values of these attributes (hosts without a value are out)
//   order[...]     candidates are tried in this order (order.ts); default `-slots`, then name
//   no span        tasks fill hosts in order: as many as fit on the first, then the next
//
// Everything is deterministic: hosts in name order, ties broken by name. A job that cannot be
// placed gets a reason a user can act on (see the tests for each text). A reason computed in a
// pass stays true for the rest of the pass (reservations only ever take resources), so it is
// cached per requirement and task count: the 30,000th job of a full cluster costs a map lookup.
//
// The pieces: requirement.ts (the compiled requirement), rusage-room.ts (slots and rusage per host,
// the pools), host-walks.ts and span-walks.ts (host selection), same-groups.ts, pend-reasons.ts.
// This file owns the Placer (the pass's caches, place, reserve) and the one-job convenience API.

import type { HostTasks } from '../statemachine/dispatch-record.js';
import type { EffectiveResReq, EffectiveValues } from '../model/profile-types.js';
import type { ClusterPools, HostView } from './host-view.js';
import { walk, walkSame } from './host-walks.js';
import type { OrderedHosts } from './order.js';
import { explain, upfrontReason } from './pend-reasons.js';
import { compileRequirement, effectiveResReqText, type CompileContext, type Requirement } from './requirement.js';
import { SelectEvaluator } from './select-eval.js';

export { NO_HOST_REASON, NO_WORKER_REASON } from './pend-reasons.js';
export { effectiveResReqText, type Requirement } from './requirement.js';

export type Placement =
  { readonly ok: true; readonly hosts: HostTasks[] } | { readonly ok: false; readonly reason: string };

/** Places jobs against one HostView and its pools (one pass). Caches compiled requirements. */
export class Placer {
  readonly select: SelectEvaluator;
  private readonly requirements = new Map<string, Requirement>();
  /** What compiling a requirement needs, with the pass's cache of ordered hosts. */
  private readonly compiling: CompileContext;

  constructor(
    readonly view: HostView,
    readonly pools: ClusterPools,
  ) {
    this.select = new SelectEvaluator(view, pools);
    this.compiling = { view, pools, select: this.select, ordered: new Map<string, OrderedHosts>() };
  }

  /**
   * The compiled requirement for `resreq`. `key` must determine `resreq` within this pass (the pass
   * uses profile name + the job's own `-R` text); by default the canonical text of `resreq` is used.
   */
  requirement(resreq: EffectiveResReq, key?: string): Requirement {
    const k = key ?? `\u0002${effectiveResReqText(resreq)}`;
    let r = this.requirements.get(k);
    if (r === undefined) {
      r = compileRequirement(this.compiling, resreq);
      this.requirements.set(k, r);
    }
    return r;
  }

  /** Where `tasks` tasks of `req` can run now, or why not. Reserves nothing. */
  place(req: Requirement, tasks: number): Placement {
    const v = this.view;
    const upfront = upfrontReason(v, req, tasks);
    if (upfront !== undefined) return { ok: false, reason: upfront };
    const known = req.failed.get(tasks);
    if (known !== undefined) return { ok: false, reason: known };

    const list = req.ordered.hosts();
    const picks = req.same === null ? walk(v, req, list, list.length, tasks) : walkSame(v, req, list, tasks);
    if (picks === null) {
      const reason = explain(v, req, list, tasks);
      req.failed.set(tasks, reason);
      return { ok: false, reason };
    }
    const hosts: HostTasks[] = new Array(picks.hosts.length);
    for (let k = 0; k < picks.hosts.length; k++)
      hosts[k] = { host: v.names[picks.hosts[k] as number] as string, tasks: picks.tasks[k] as number };
    return { ok: true, hosts };
  }

  /** Takes what `hosts` use of `req` from the view and the pools (later jobs of the pass see it taken). */
  reserve(req: Requirement, hosts: readonly HostTasks[]): void {
    const v = this.view;
    for (const ht of hosts) {
      const i = v.indexOf.get(ht.host);
      if (i === undefined) throw new RangeError(`reserve: host ${ht.host} is not in the view`);
      v.slotsFree[i]! -= ht.tasks;
      for (const item of req.hostItems) item.res.usedMilli[i]! += item.perTaskMilli * ht.tasks;
      v.noteChange(i);
    }
    for (const p of req.poolItems) p.pool.usedMilli += p.valueMilli;
  }
}

// ---- the convenience API (one job at a time; the pass uses a Placer directly) ----

const placers = new WeakMap<HostView, Placer>();

/** The Placer of a view (created on first use and kept as long as the view). */
export function placerFor(view: HostView, pools: ClusterPools): Placer {
  let p = placers.get(view);
  if (p === undefined || p.pools !== pools) {
    p = new Placer(view, pools);
    placers.set(view, p);
  }
  return p;
}

/** Where the job's tasks can run now on `view`, or why not. Reserves nothing (see `reserve`). */
export function place(effective: EffectiveValues, view: HostView, pools: ClusterPools): Placement {
  const p = placerFor(view, pools);
  return p.place(p.requirement(effective.resreq), effective.tasks);
}

/** Takes a placement's resources in the view and pools, so later placements of the pass see them taken. */
export function reserve(
  effective: EffectiveValues,
  hosts: readonly HostTasks[],
  view: HostView,
  pools: ClusterPools,
): void {
  const p = placerFor(view, pools);
  p.reserve(p.requirement(effective.resreq), hosts);
}
