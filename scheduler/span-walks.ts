// Host selection under span[...]: `hosts=1` (every task on one host), `hosts=N` (at most N hosts:
// first in order, else the N roomiest) and `ptile=P` (P tasks a host, the remainder on one more,
// last). Each walks candidates already in order and answers the picks, or null when none fit.

import type { HostView } from './host-view.js';
import type { Requirement } from './requirement.js';
import { capOf } from './rusage-room.js';

/** Picks: host indices and task counts, in the order the hosts were chosen. */
export interface Picks {
  readonly hosts: number[];
  readonly tasks: number[];
}

/** `span[hosts=1]`: the first host that takes every task. */
export function walkOneHost(
  view: HostView,
  req: Requirement,
  list: ArrayLike<number>,
  len: number,
  tasks: number,
): Picks | null {
  for (let k = 0; k < len; k++) {
    const i = list[k] as number;
    if (capOf(view, req, i) >= tasks) return { hosts: [i], tasks: [tasks] };
  }
  return null;
}

/**
 * At most `maxHosts` hosts. First in order, taking a host only when it holds at least its share of
 * what is left; when that misses, the `maxHosts` roomiest hosts (a fit exists iff they hold it).
 */
export function walkHosts(
  view: HostView,
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
    const c = capOf(view, req, i);
    const share = Math.ceil(rem / (maxHosts - picks.hosts.length));
    if (c < share) continue;
    const t = c < rem ? c : rem;
    picks.hosts.push(i);
    picks.tasks.push(t);
    rem -= t;
  }
  if (rem === 0) return picks;
  return roomiestHosts(view, req, list, len, tasks, maxHosts);
}

/** The `maxHosts` roomiest hosts (kept in order), filled in order; null when they cannot hold `tasks`. */
function roomiestHosts(
  view: HostView,
  req: Requirement,
  list: ArrayLike<number>,
  len: number,
  tasks: number,
  maxHosts: number,
): Picks | null {
  const byRoom: Array<{ i: number; k: number; c: number }> = [];
  for (let k = 0; k < len; k++) {
    const i = list[k] as number;
    const c = capOf(view, req, i);
    if (c > 0) byRoom.push({ i, k, c });
  }
  byRoom.sort((a, b) => b.c - a.c || a.k - b.k);
  const chosen = byRoom.slice(0, maxHosts).sort((a, b) => a.k - b.k);
  const out: Picks = { hosts: [], tasks: [] };
  let rem = tasks;
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
export function walkPtile(
  view: HostView,
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
    const c = capOf(view, req, i);
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
