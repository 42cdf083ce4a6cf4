// CPU time of a benchmark's processes over its timed window, from /proc (USER_HZ ticks): this
// process and every process under it, each with its own time and the time of the children it
// reaped (a worker's launcher reaps the job processes: their CPU is its children's).

import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on Linux). */
const USER_HZ = 100;

export interface ProcCpu {
  readonly pid: number;
  readonly ppid: number;
  /** user + system, ms. */
  readonly own_ms: number;
  /** user + system of the children it waited for, ms. */
  readonly children_ms: number;
}

function stat(pid: number): ProcCpu | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    const ms = (i: number): number => (Number(f[i]) * 1000) / USER_HZ;
    return { pid, ppid: Number(f[1]), own_ms: ms(11) + ms(12), children_ms: ms(13) + ms(14) };
  } catch {
    return null; // gone meanwhile
  }
}

/** This process and all its descendants now, by pid. */
export function cpuOfTree(root = process.pid): Map<number, ProcCpu> {
  const all: ProcCpu[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const s = stat(Number(d));
    if (s !== null) all.push(s);
  }
  const byParent = new Map<number, ProcCpu[]>();
  for (const p of all) byParent.set(p.ppid, [...(byParent.get(p.ppid) ?? []), p]);
  const out = new Map<number, ProcCpu>();
  const self = all.find((p) => p.pid === root);
  const todo = self === undefined ? [] : [self];
  for (let p = todo.pop(); p !== undefined; p = todo.pop()) {
    out.set(p.pid, p);
    todo.push(...(byParent.get(p.pid) ?? []));
  }
  return out;
}

/** What each process of `after` used since `before` (a process started meanwhile: all it used), ms. */
export function cpuSince(
  before: Map<number, ProcCpu>,
  after: Map<number, ProcCpu>,
): Map<number, { own_ms: number; children_ms: number; ppid: number }> {
  const out = new Map<number, { own_ms: number; children_ms: number; ppid: number }>();
  for (const [pid, a] of after) {
    const b = before.get(pid);
    out.set(pid, {
      ppid: a.ppid,
      own_ms: a.own_ms - (b?.own_ms ?? 0),
      children_ms: a.children_ms - (b?.children_ms ?? 0),
    });
  }
  return out;
}
