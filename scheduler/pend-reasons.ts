// Pend reasons a user can act on: the checks made before any host is walked (no host, no worker,
// a span that cannot hold the job, no host satisfying select[...], a pool short), and why a walk
// found no placement (slots or rusage room, by span and same[...]). See the tests for each text.

import type { Span } from '../model/profile-types.js';
import { formatSame, formatSpan } from '../model/resreq.js';
import { walk } from './host-walks.js';
import type { HostView } from './host-view.js';
import type { Requirement } from './requirement.js';
import { capOf, poolShortfall } from './rusage-room.js';
import { sameGroups } from './same-groups.js';

export const NO_WORKER_REASON = 'no worker is connected';
export const NO_HOST_REASON = 'no host is configured (hosts.yaml lists none)';

/** Why `tasks` tasks of `req` cannot run whatever the hosts' room, or undefined (walk them). */
export function upfrontReason(v: HostView, req: Requirement, tasks: number): string | undefined {
  if (req.unsupported !== null) return req.unsupported;
  if (v.count === 0) return NO_HOST_REASON;
  if (v.availableCount === 0) return NO_WORKER_REASON;
  const span = req.span;
  if (span?.ptile !== undefined && span.hosts !== undefined && span.ptile * span.hosts < tasks)
    return `${formatSpan(span)} holds at most ${span.ptile * span.hosts} tasks, the job has ${tasks}`;
  const selected = req.selected.hosts.length;
  if (selected === 0)
    return `not enough hosts satisfy select[${req.selectText}] (0 of ${v.availableCount} available hosts)`;
  if (span?.ptile !== undefined) {
    const needHosts = Math.ceil(tasks / span.ptile);
    if (selected < needHosts) {
      const what =
        req.selectText === ''
          ? `not enough hosts are available (${selected}`
          : `not enough hosts satisfy select[${req.selectText}] (${selected} of ${v.availableCount} available hosts`;
      return `${what}; ${formatSpan(span)} needs ${needHosts} for ${tasks} tasks)`;
    }
  }
  return poolShortfall(req);
}

/** Why no placement of `tasks` tasks was found among `list` (the ordered candidates). */
export function explain(v: HostView, req: Requirement, list: Int32Array, tasks: number): string {
  if (req.same !== null) {
    const union = walk(v, req, list, list.length, tasks);
    if (union === null) return explainIn(v, req, list, tasks);
    const groups = sameGroups(v, req.same, list);
    if (groups.length === 0) return `no host ${where(v, req)} has a value for ${formatSame(req.same)}`;
    let best = groups[0]!;
    let bestRoom = -1;
    for (const g of groups) {
      let room = 0;
      for (const i of g.hosts) room += capOf(v, req, i);
      if (room > bestRoom) {
        bestRoom = room;
        best = g;
      }
    }
    const label = req.same.map((a, k) => `${a}=${best.key.split('\u0000')[k]}`).join(',');
    return `no group of hosts sharing ${formatSame(req.same)} ${where(v, req)} can hold the job: the roomiest (${label}) has room for ${bestRoom} of ${tasks} tasks${spanSuffix(req)}`;
  }
  return explainIn(v, req, list, tasks);
}

/** Free slots and rusage room among the candidates, summed and at most. */
interface Room {
  readonly freeSum: number;
  readonly roomSum: number;
  readonly freeMax: number;
  readonly roomMax: number;
  /** Each candidate's room, in order. */
  readonly rooms: number[];
}

function roomOf(v: HostView, req: Requirement, list: ArrayLike<number>): Room {
  let freeSum = 0;
  let roomSum = 0;
  let freeMax = 0;
  let roomMax = 0;
  const rooms: number[] = [];
  for (let k = 0; k < list.length; k++) {
    const i = list[k] as number;
    const f = Math.max(0, v.slotsFree[i] as number);
    const c = capOf(v, req, i);
    freeSum += f;
    roomSum += c;
    if (f > freeMax) freeMax = f;
    if (c > roomMax) roomMax = c;
    rooms.push(c);
  }
  return { freeSum, roomSum, freeMax, roomMax, rooms };
}

function explainIn(v: HostView, req: Requirement, list: ArrayLike<number>, tasks: number): string {
  const { freeSum, roomSum, freeMax, roomMax, rooms } = roomOf(v, req, list);
  const here = where(v, req);
  const ru = req.hostRusageText;
  const span = req.span;
  if (span?.ptile !== undefined) return explainPtile(v, req, list, tasks, span, span.ptile, rooms);
  if (span?.hosts === 1) {
    if (ru === '' || roomMax === freeMax)
      return `no host has ${tasks} free ${slots(tasks)} for span[hosts=1] (at most ${freeMax} ${here})`;
    return `no host has room for ${tasks} ${plural(tasks, 'task')} with rusage[${ru}] per task for span[hosts=1] (at most ${roomMax} ${here})`;
  }
  if (span?.hosts !== undefined) {
    const top = rooms.sort((a, b) => b - a).slice(0, span.hosts);
    let topSum = 0;
    for (const c of top) topSum += c;
    const rusage = ru === '' ? '' : ` with rusage[${ru}] per task`;
    return `needs ${tasks} ${slots(tasks)}${rusage} on at most ${span.hosts} hosts for ${formatSpan(span)}, the roomiest ${span.hosts} ${here} hold ${topSum}`;
  }
  if (ru === '' || roomSum === freeSum) return `needs ${tasks} ${slots(tasks)}, ${freeSum} free ${here}`;
  return `needs ${tasks} ${slots(tasks)} with rusage[${ru}] per task, room for ${roomSum} ${here}`;
}

/** `span[ptile=P]`: how many hosts with room for a chunk are needed, and how many have it. */
function explainPtile(
  v: HostView,
  req: Requirement,
  list: ArrayLike<number>,
  tasks: number,
  span: Span,
  P: number,
  rooms: readonly number[],
): string {
  const ru = req.hostRusageText;
  const needHosts = Math.ceil(tasks / P);
  const chunk = Math.min(P, tasks);
  const have = rooms.filter((c) => c >= chunk).length;
  let haveSlots = 0;
  for (let k = 0; k < list.length; k++) if ((v.slotsFree[list[k] as number] as number) >= chunk) haveSlots++;
  const want =
    ru === '' || have === haveSlots
      ? `${chunk} free ${slots(chunk)}`
      : `room for ${chunk} ${plural(chunk, 'task')} with rusage[${ru}] per task`;
  return `needs ${needHosts} ${plural(needHosts, 'host')} with ${want} for ${formatSpan(span)}, ${have} ${where(v, req)} ${have === 1 ? 'has' : 'have'} them`;
}

function where(v: HostView, req: Requirement): string {
  return req.selectText === ''
    ? `on the ${v.availableCount} available ${plural(v.availableCount, 'host')}`
    : `on hosts satisfying select[${req.selectText}]`;
}

function spanSuffix(req: Requirement): string {
  return req.span === null ? '' : ` with ${formatSpan(req.span)}`;
}

function plural(n: number, word: string): string {
  return n === 1 ? word : `${word}s`;
}

function slots(n: number): string {
  return plural(n, 'slot');
}
