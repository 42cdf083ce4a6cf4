// A job's resource requirement compiled against one pass's view: the hosts its select[...] leaves,
// in its order[...], its host-scoped rusage per task and its cluster-scoped items (milli-units),
// span and same; shared by every job with the same requirement. Also the requirement's canonical text.

import { fromMilli, toMilli } from '../model/amount.js';
import type { EffectiveResReq, SelectExpr, Span } from '../model/profile-types.js';
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
import type { SelectEvaluator, SelectedHosts } from './select-eval.js';

/** Amounts in milli-units (model/amount.ts), compared exactly as usage.ts's placementProblem does. */
export interface HostItem {
  readonly name: string;
  readonly perTaskMilli: number;
  readonly res: HostResource;
}

export interface PoolItem {
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

/** What compiling needs of the Placer: its view, pools, select evaluator and ordered-host cache. */
export interface CompileContext {
  readonly view: HostView;
  readonly pools: ClusterPools;
  readonly select: SelectEvaluator;
  /** select text + order keys → the hosts in that order (one per pass). */
  readonly ordered: Map<string, OrderedHosts>;
}

/** Compiles `resreq` against the pass's view. */
export function compileRequirement(cx: CompileContext, resreq: EffectiveResReq): Requirement {
  const terms: SelectExpr[] = resreq.select.map((t) => t.value);
  const selectText = terms.length === 0 ? '' : formatSelectTerms(terms);
  const selected = cx.select.hostsFor(terms, selectText);
  const orderKeys = resreq.order?.value ?? DEFAULT_ORDER;
  const orderedKey = `${selectText}\u0000${orderKeyText(orderKeys)}`;
  let ordered = cx.ordered.get(orderedKey);
  if (ordered === undefined) {
    ordered = new OrderedHosts(cx.view, selected.hosts, orderKeys);
    cx.ordered.set(orderedKey, ordered);
  }
  const { hostItems, poolItems } = rusageItems(cx, resreq);
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

/** The rusage split by scope: host-scoped items summed per task, cluster-scoped ones with their pool. */
function rusageItems(cx: CompileContext, resreq: EffectiveResReq): { hostItems: HostItem[]; poolItems: PoolItem[] } {
  const hostPerTaskMilli = new Map<string, number>();
  const poolItems: PoolItem[] = [];
  for (const { value: r } of resreq.rusage) {
    if (!(r.value > 0)) continue;
    // The live merge parsed these values: the parser refuses one finer than a thousandth.
    const milli = toMilli(r.value, `rusage ${r.name}`);
    if (cx.view.isClusterScoped(r.name)) {
      const pool = cx.pools.get(r.name);
      if (pool !== undefined) poolItems.push({ name: r.name, value: r.value, valueMilli: milli, pool });
    } else hostPerTaskMilli.set(r.name, (hostPerTaskMilli.get(r.name) ?? 0) + milli);
  }
  const hostItems: HostItem[] = [...hostPerTaskMilli].map(([name, perTaskMilli]) => ({
    name,
    perTaskMilli,
    res: cx.view.hostResource(name),
  }));
  return { hostItems, poolItems };
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
