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

import { fromMilli, toMilli } from '../model/amount.js';
import type { HostTasks } from '../statemachine/dispatch-record.js';
import type { EffectiveResReq, EffectiveValues, SelectExpr, Span } from '../model/profile-types.js';
import {
  formatOrder,
  formatResReq,
  formatRusageItem,
  formatSame,
  formatSelectTerms,
  formatSpan,
} from '../model/resreq.js';
import type { ClusterPools, HostResource, HostView, Pool } from './host-view.js';
import { DEFAULT_ORDER, OrderedHosts, orderKeyText } from './order.js';
import { SelectEvaluator, type SelectedHosts } from './select-eval.js';

export type Placement =
  { readonly ok: true; readonly hosts: HostTasks[] } | { readonly ok: false; readonly reason: string };

export const NO_WORKER_REASON = 'no worker is connected';
export const NO_HOST_REASON = 'no host is configured (hosts.yaml lists none)';

/** Amounts in milli-units (model/amount.ts), compared exactly as usage.ts's placementProblem does. */
interface HostItem {
  readonly name: string;
  readonly perTaskMilli: number;
  readonly res: HostResource;
}

interface PoolItem {
  readonly name: string;
  /** The job's amount in units, for reasons. */
  readonly value: number;
  readonly valueMilli: number;
  readonly pool: Pool;
}

/** A job's resource requirement compiled against one pass's view (shared by every job with the same requirement). */
export interface Requirement {
  /** Canonical select text, '' when none. */
  readonly selectText: string;
  readonly selected: SelectedHosts;
  readonly ordered: OrderedHosts;
  readonly hostItems: readonly HostItem[];
  readonly poolItems: readonly PoolItem[];
  /** `mem=4000,gpu=1`: the host-scoped rusage, for reasons. */
  readonly hostRusageText: string;
  readonly span: Span | null;
  readonly same: readonly string[] | null;
  /** Set when the requirement cannot be scheduled at all (a compound requirement). */
  readonly unsupported: string | null;
  /** task count → reason, for this pass. */
  readonly failed: Map<number, string>;
}

/** Picks: host indices and task counts, in the order the hosts were chosen. */
interface Picks {
  readonly hosts: number[];
  readonly tasks: number[];
}

/** Places jobs against one HostView and its pools (one pass). Caches compiled requirements. */
export class Placer {
  readonly select: SelectEvaluator;
  private readonly ordered = new Map<string, OrderedHosts>();
  private readonly requirements = new Map<string, Requirement>();

  constructor(
    readonly view: HostView,
    readonly pools: ClusterPools,
  ) {
    this.select = new SelectEvaluator(view, pools);
  }

  /**
   * The compiled requirement for `resreq`. `key` must determine `resreq` within this pass (the pass
   * uses profile name + the job's own `-R` text); by default the canonical text of `resreq` is used.
   */
  requirement(resreq: EffectiveResReq, key?: string): Requirement {
    const k = key ?? `\u0002${effectiveResReqText(resreq)}`;
    let r = this.requirements.get(k);
    if (r === undefined) {
      r = this.compile(resreq);
      this.requirements.set(k, r);
    }
    return r;
  }

  private compile(resreq: EffectiveResReq): Requirement {
    const terms: SelectExpr[] = resreq.select.map((t) => t.value);
    const selectText = terms.length === 0 ? '' : formatSelectTerms(terms);
    const selected = this.select.hostsFor(terms, selectText);
    const orderKeys = resreq.order?.value ?? DEFAULT_ORDER;
    const orderedKey = `${selectText}\u0000${orderKeyText(orderKeys)}`;
    let ordered = this.ordered.get(orderedKey);
    if (ordered === undefined) {
      ordered = new OrderedHosts(this.view, selected.hosts, orderKeys);
      this.ordered.set(orderedKey, ordered);
    }
    const hostPerTaskMilli = new Map<string, number>();
    const poolItems: PoolItem[] = [];
    for (const { value: r } of resreq.rusage) {
      if (!(r.value > 0)) continue;
      // The live merge parsed these values: the parser refuses one finer than a thousandth.
      const milli = toMilli(r.value, `rusage ${r.name}`);
      if (this.view.isClusterScoped(r.name)) {
        const pool = this.pools.get(r.name);
        if (pool !== undefined) poolItems.push({ name: r.name, value: r.value, valueMilli: milli, pool });
      } else hostPerTaskMilli.set(r.name, (hostPerTaskMilli.get(r.name) ?? 0) + milli);
    }
    const hostItems: HostItem[] = [...hostPerTaskMilli].map(([name, perTaskMilli]) => ({
      name,
      perTaskMilli,
      res: this.view.hostResource(name),
    }));
    const hostRusageText = hostItems
      .map((i) => formatRusageItem({ name: i.name, value: fromMilli(i.perTaskMilli) }))
      .join(',');
    return {
      selectText,
      selected,
      ordered,
      hostItems,
      poolItems,
      hostRusageText,
      span: resreq.span?.value ?? null,
      same: resreq.same?.value ?? null,
      unsupported:
        resreq.compound === undefined
          ? null
          : `compound resource requirement ${formatResReq(resreq.compound)} cannot be scheduled: the scheduler places one simple requirement per job; resubmit with one`,
      failed: new Map(),
    };
  }

  /** Where `tasks` tasks of `req` can run now, or why not. Reserves nothing. */
  place(req: Requirement, tasks: number): Placement {
    const v = this.view;
    if (req.unsupported !== null) return { ok: false, reason: req.unsupported };
    if (v.count === 0) return { ok: false, reason: NO_HOST_REASON };
    if (v.availableCount === 0) return { ok: false, reason: NO_WORKER_REASON };
    const span = req.span;
    if (span?.ptile !== undefined && span.hosts !== undefined && span.ptile * span.hosts < tasks) {
      return {
        ok: false,
        reason: `${formatSpan(span)} holds at most ${span.ptile * span.hosts} tasks, the job has ${tasks}`,
      };
    }
    const selected = req.selected.hosts.length;
    if (selected === 0)
      return {
        ok: false,
        reason: `not enough hosts satisfy select[${req.selectText}] (0 of ${v.availableCount} available hosts)`,
      };
    if (span?.ptile !== undefined) {
      const needHosts = Math.ceil(tasks / span.ptile);
      if (selected < needHosts) {
        const what =
          req.selectText === ''
            ? `not enough hosts are available (${selected}`
            : `not enough hosts satisfy select[${req.selectText}] (${selected} of ${v.availableCount} available hosts`;
        return { ok: false, reason: `${what}; ${formatSpan(span)} needs ${needHosts} for ${tasks} tasks)` };
      }
    }
    for (const p of req.poolItems) {
      const freeMilli = p.pool.totalMilli - p.pool.usedMilli;
      if (freeMilli < p.valueMilli)
        return {
          ok: false,
          reason: `${p.name}: ${fromMilli(freeMilli)} of ${p.pool.total} free${p.value !== 1 ? `, the job needs ${p.value}` : ''}`,
        };
    }
    const known = req.failed.get(tasks);
    if (known !== undefined) return { ok: false, reason: known };

    const list = req.ordered.hosts();
    const picks = req.same === null ? this.walk(req, list, list.length, tasks) : this.walkSame(req, list, tasks);
    if (picks === null) {
      const reason = this.explain(req, list, tasks);
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

  /** How many tasks of `req` host `i` can take now (free slots, and each host-scoped rusage item). */
  private capOf(req: Requirement, i: number): number {
    let c = this.view.slotsFree[i] as number;
    if (c <= 0) return 0;
    for (const item of req.hostItems) {
      const cap = item.res.capMilli[i] as number;
      const used = item.res.usedMilli[i] as number;
      const per = item.perTaskMilli;
      // Integers below 2^53: the quotient's floor is never too low, and too high only by rounding;
      // settle it by usage.ts's own inequality (held + need > capacity), so that apply accepts
      // exactly what is placed here.
      let k = Math.floor((cap - used) / per);
      if (k > c) k = c;
      while (k > 0 && used + per * k > cap) k--;
      c = k;
      if (c <= 0) return 0;
    }
    return c;
  }

  /** The placement among `list[0..len)` (already in order), or null. */
  private walk(req: Requirement, list: ArrayLike<number>, len: number, tasks: number): Picks | null {
    const span = req.span;
    if (span?.ptile !== undefined) return this.walkPtile(req, list, len, tasks, span.ptile);
    if (span?.hosts !== undefined)
      return span.hosts === 1
        ? this.walkOneHost(req, list, len, tasks)
        : this.walkHosts(req, list, len, tasks, span.hosts);
    const picks: Picks = { hosts: [], tasks: [] };
    let rem = tasks;
    for (let k = 0; k < len && rem > 0; k++) {
      const i = list[k] as number;
      const c = this.capOf(req, i);
      if (c <= 0) continue;
      const t = c < rem ? c : rem;
      picks.hosts.push(i);
      picks.tasks.push(t);
      rem -= t;
    }
    return rem === 0 ? picks : null;
  }

  private walkOneHost(req: Requirement, list: ArrayLike<number>, len: number, tasks: number): Picks | null {
    for (let k = 0; k < len; k++) {
      const i = list[k] as number;
      if (this.capOf(req, i) >= tasks) return { hosts: [i], tasks: [tasks] };
    }
    return null;
  }

  /**
   * At most `maxHosts` hosts. First in order, taking a host only when it holds at least its share of
   * what is left; when that misses, the `maxHosts` roomiest hosts (a fit exists iff they hold it).
   */
  private walkHosts(
    req: Requirement,
    list: ArrayLike<number>,
    len: number,
    tasks: number,
    maxHosts: number,
  ): Picks | null {
    const picks: Picks = { hosts: [], tasks: [] };
    let rem = tasks;
    for (let k = 0; k < len && rem > 0 && picks.hosts.length < maxHosts; k++) {
      const i = list[k] as number;
      const c = this.capOf(req, i);
      const share = Math.ceil(rem / (maxHosts - picks.hosts.length));
      if (c < share) continue;
      const t = c < rem ? c : rem;
      picks.hosts.push(i);
      picks.tasks.push(t);
      rem -= t;
    }
    if (rem === 0) return picks;
    const byRoom: Array<{ i: number; k: number; c: number }> = [];
    for (let k = 0; k < len; k++) {
      const i = list[k] as number;
      const c = this.capOf(req, i);
      if (c > 0) byRoom.push({ i, k, c });
    }
    byRoom.sort((a, b) => b.c - a.c || a.k - b.k);
    const chosen = byRoom.slice(0, maxHosts).sort((a, b) => a.k - b.k);
    const out: Picks = { hosts: [], tasks: [] };
    rem = tasks;
    for (const h of chosen) {
      if (rem === 0) break;
      const t = h.c < rem ? h.c : rem;
      out.hosts.push(h.i);
      out.tasks.push(t);
      rem -= t;
    }
    return rem === 0 ? out : null;
  }

  /** `span[ptile=P]`: floor(tasks/P) hosts with P tasks, and one more with the remainder. */
  private walkPtile(
    req: Requirement,
    list: ArrayLike<number>,
    len: number,
    tasks: number,
    ptile: number,
  ): Picks | null {
    const full = Math.floor(tasks / ptile);
    const rest = tasks - full * ptile;
    const chosenHosts: number[] = [];
    const chosenTasks: number[] = [];
    let fullTaken = 0;
    let restAt = -1; // index into chosen of the remainder host
    for (let k = 0; k < len && (fullTaken < full || (rest > 0 && restAt < 0)); k++) {
      const i = list[k] as number;
      const c = this.capOf(req, i);
      if (fullTaken < full && c >= ptile) {
        chosenHosts.push(i);
        chosenTasks.push(ptile);
        fullTaken++;
      } else if (rest > 0 && restAt < 0 && c >= rest) {
        restAt = chosenHosts.length;
        chosenHosts.push(i);
        chosenTasks.push(rest);
      }
    }
    if (fullTaken < full || (rest > 0 && restAt < 0)) return null;
    if (restAt >= 0 && restAt !== chosenHosts.length - 1) {
      // The host with fewer tasks goes last (LSF: "the last host may have fewer").
      const [h] = chosenHosts.splice(restAt, 1);
      const [t] = chosenTasks.splice(restAt, 1);
      chosenHosts.push(h as number);
      chosenTasks.push(t as number);
    }
    return { hosts: chosenHosts, tasks: chosenTasks };
  }

  /** `same[...]`: the first group (by its first host in order) of hosts sharing the values that fits. */
  private walkSame(req: Requirement, list: ArrayLike<number>, tasks: number): Picks | null {
    for (const g of this.sameGroups(req, list)) {
      const picks = this.walk(req, g.hosts, g.hosts.length, tasks);
      if (picks !== null) return picks;
    }
    return null;
  }

  private sameGroups(req: Requirement, list: ArrayLike<number>): Array<{ key: string; hosts: number[] }> {
    const attrs = (req.same ?? []).map((a) => this.attrValues(a));
    const groups = new Map<string, { key: string; hosts: number[] }>();
    outer: for (let k = 0; k < list.length; k++) {
      const i = list[k] as number;
      let key = '';
      for (let a = 0; a < attrs.length; a++) {
        const val = attrs[a]!(i);
        if (val === undefined) continue outer;
        key += a === 0 ? val : `\u0000${val}`;
      }
      let g = groups.get(key);
      if (g === undefined) groups.set(key, (g = { key, hosts: [] }));
      g.hosts.push(i);
    }
    return [...groups.values()];
  }

  /** A host attribute's value as text for `same[...]`, undefined where the host has none. */
  private attrValues(name: string): (i: number) => string | undefined {
    const v = this.view;
    const s = v.stringOf(name);
    if (s !== undefined) return (i) => s[i];
    const b = v.booleanOf(name);
    if (b !== undefined) return (i) => (b[i] === 1 ? '1' : '0');
    switch (name) {
      case 'ncpus':
        return (i) => String(v.slotsCap[i]);
      case 'maxmem':
        return (i) => String(v.maxmemMb[i]);
    }
    const r = v.declaredResource(name);
    if (r !== undefined) return (i) => (r.declared[i] === 1 ? String(fromMilli(r.capMilli[i] as number)) : undefined);
    return () => undefined;
  }

  // ---- reasons ----

  private explain(req: Requirement, list: Int32Array, tasks: number): string {
    if (req.same !== null) {
      const union = this.walk(req, list, list.length, tasks);
      if (union === null) return this.explainIn(req, list, tasks);
      const groups = this.sameGroups(req, list);
      if (groups.length === 0) return `no host ${this.where(req)} has a value for ${formatSame(req.same)}`;
      let best = groups[0]!;
      let bestRoom = -1;
      for (const g of groups) {
        let room = 0;
        for (const i of g.hosts) room += this.capOf(req, i);
        if (room > bestRoom) {
          bestRoom = room;
          best = g;
        }
      }
      const label = req.same.map((a, k) => `${a}=${best.key.split('\u0000')[k]}`).join(',');
      return `no group of hosts sharing ${formatSame(req.same)} ${this.where(req)} can hold the job: the roomiest (${label}) has room for ${bestRoom} of ${tasks} tasks${this.spanSuffix(req)}`;
    }
    return this.explainIn(req, list, tasks);
  }

  private explainIn(req: Requirement, list: ArrayLike<number>, tasks: number): string {
    const v = this.view;
    let freeSum = 0;
    let roomSum = 0;
    let freeMax = 0;
    let roomMax = 0;
    const rooms: number[] = [];
    for (let k = 0; k < list.length; k++) {
      const i = list[k] as number;
      const f = Math.max(0, v.slotsFree[i] as number);
      const c = this.capOf(req, i);
      freeSum += f;
      roomSum += c;
      if (f > freeMax) freeMax = f;
      if (c > roomMax) roomMax = c;
      rooms.push(c);
    }
    const where = this.where(req);
    const ru = req.hostRusageText;
    const span = req.span;
    if (span?.ptile !== undefined) {
      const P = span.ptile;
      const needHosts = Math.ceil(tasks / P);
      const chunk = Math.min(P, tasks);
      const have = rooms.filter((c) => c >= chunk).length;
      let haveSlots = 0;
      for (let k = 0; k < list.length; k++) if ((v.slotsFree[list[k] as number] as number) >= chunk) haveSlots++;
      const want =
        ru === '' || have === haveSlots
          ? `${chunk} free ${slots(chunk)}`
          : `room for ${chunk} ${plural(chunk, 'task')} with rusage[${ru}] per task`;
      return `needs ${needHosts} ${plural(needHosts, 'host')} with ${want} for ${formatSpan(span)}, ${have} ${where} ${have === 1 ? 'has' : 'have'} them`;
    }
    if (span?.hosts === 1) {
      if (ru === '' || roomMax === freeMax)
        return `no host has ${tasks} free ${slots(tasks)} for span[hosts=1] (at most ${freeMax} ${where})`;
      return `no host has room for ${tasks} ${plural(tasks, 'task')} with rusage[${ru}] per task for span[hosts=1] (at most ${roomMax} ${where})`;
    }
    if (span?.hosts !== undefined) {
      const top = rooms.sort((a, b) => b - a).slice(0, span.hosts);
      let topSum = 0;
      for (const c of top) topSum += c;
      const rusage = ru === '' ? '' : ` with rusage[${ru}] per task`;
      return `needs ${tasks} ${slots(tasks)}${rusage} on at most ${span.hosts} hosts for ${formatSpan(span)}, the roomiest ${span.hosts} ${where} hold ${topSum}`;
    }
    if (ru === '' || roomSum === freeSum) return `needs ${tasks} ${slots(tasks)}, ${freeSum} free ${where}`;
    return `needs ${tasks} ${slots(tasks)} with rusage[${ru}] per task, room for ${roomSum} ${where}`;
  }

  private where(req: Requirement): string {
    return req.selectText === ''
      ? `on the ${this.view.availableCount} available ${plural(this.view.availableCount, 'host')}`
      : `on hosts satisfying select[${req.selectText}]`;
  }

  private spanSuffix(req: Requirement): string {
    return req.span === null ? '' : ` with ${formatSpan(req.span)}`;
  }
}

function plural(n: number, word: string): string {
  return n === 1 ? word : `${word}s`;
}

function slots(n: number): string {
  return plural(n, 'slot');
}

/** Canonical text of an effective resource requirement (a cache key; the same as the `-R` it reads as). */
export function effectiveResReqText(r: EffectiveResReq): string {
  if (r.compound !== undefined) return formatResReq(r.compound);
  const out: string[] = [];
  if (r.select.length > 0) out.push(`select[${formatSelectTerms(r.select.map((t) => t.value))}]`);
  if (r.rusage.length > 0) out.push(`rusage[${r.rusage.map((t) => formatRusageItem(t.value)).join(',')}]`);
  if (r.span !== null) out.push(formatSpan(r.span.value));
  if (r.same !== null) out.push(formatSame(r.same.value));
  if (r.order !== null) out.push(formatOrder(r.order.value));
  return out.join(' ');
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
