// The rusage checks: how many tasks of a requirement a host can take now (its free slots and each
// host-scoped rusage item, settled by usage.ts's own inequality so that apply accepts exactly what
// is placed), and whether the cluster-scoped pools (licenses) hold the job's amounts.

import { fromMilli } from '../model/amount.js';
import type { HostView } from './host-view.js';
import type { Requirement } from './requirement.js';

/** How many tasks of `req` host `i` can take now (free slots, and each host-scoped rusage item). */
export function capOf(view: HostView, req: Requirement, i: number): number {
  let c = view.slotsFree[i] as number;
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

/** Why the cluster-scoped pools cannot hold the job (the first pool short), or undefined. */
export function poolShortfall(req: Requirement): string | undefined {
  for (const p of req.poolItems) {
    const freeMilli = p.pool.totalMilli - p.pool.usedMilli;
    if (freeMilli < p.valueMilli)
      return `${p.name}: ${fromMilli(freeMilli)} of ${p.pool.total} free${p.value !== 1 ? `, the job needs ${p.value}` : ''}`;
  }
  return undefined;
}
