// Host selection: which of the ordered candidates take a job's tasks. Without span, tasks fill
// hosts in order (as many as fit on the first, then the next); with span, span-walks.ts; with
// same[...], the first group of hosts sharing the values (same-groups.ts) that fits.

import type { HostView } from './host-view.js';
import type { Requirement } from './requirement.js';
import { capOf } from './rusage-room.js';
import { sameGroups } from './same-groups.js';
import { walkHosts, walkOneHost, walkPtile, type Picks } from './span-walks.js';

export type { Picks } from './span-walks.js';

/** The placement among `list[0..len)` (already in order), or null. */
export function walk(
  view: HostView,
  req: Requirement,
  list: ArrayLike<number>,
  len: number,
  tasks: number,
): Picks | null {
  const span = req.span;
  if (span?.ptile !== undefined) return walkPtile(view, req, list, len, tasks, span.ptile);
  if (span?.hosts !== undefined)
    return span.hosts === 1
      ? walkOneHost(view, req, list, len, tasks)
      : walkHosts(view, req, list, len, tasks, span.hosts);
  const picks: Picks = { hosts: [], tasks: [] };
  let rem = tasks;
  for (let k = 0; k < len && rem > 0; k++) {
    const i = list[k] as number;
    const c = capOf(view, req, i);
    if (c <= 0) continue;
    const t = c < rem ? c : rem;
    picks.hosts.push(i);
    picks.tasks.push(t);
    rem -= t;
  }
  return rem === 0 ? picks : null;
}

/** `same[...]`: the first group (by its first host in order) of hosts sharing the values that fits. */
export function walkSame(view: HostView, req: Requirement, list: ArrayLike<number>, tasks: number): Picks | null {
  for (const g of sameGroups(view, req.same, list)) {
    const picks = walk(view, req, g.hosts, g.hosts.length, tasks);
    if (picks !== null) return picks;
  }
  return null;
}
