// A derived index of the state's finished jobs (DONE/EXIT) by end time, and of the pending jobs with
// a dependency, so that the leader's retention scan (retention.ts, every 500 ms) and a CleanFact's
// apply (apply-clean.ts) read only the jobs due and those a dependency may name, not every job in
// the state. Derived data: not in ControllerState, not in the snapshot (the snapshot's bytes do not
// change), built from the jobs by one walk the first time a state is asked and then kept up to
// date by apply at the few places a job ends, runs again, is submitted or leaves (noteFinished,
// noteUnfinished, notePending, noteRemoved). A restored state is a new object: its index is built
// afresh on first use. Pure and deterministic: it answers the same on every controller.
//
// invariants.ts checks a built index against a walk of the jobs (the tests run it after every apply).

import { isRunning, type ControllerState, type Job } from './state.js';

interface Entry {
  readonly id: number;
  readonly endTimeMs: number;
  live: boolean;
}

const before = (a: Entry, b: Entry): boolean =>
  a.endTimeMs < b.endTimeMs || (a.endTimeMs === b.endTimeMs && a.id < b.id);

const isFinished = (j: Job): boolean => j.state === 'DONE' || j.state === 'EXIT';

/** Dead entries are dropped from the order once they are this many and more than the live ones. */
const COMPACT_AT = 1024;

export class FinishedIndex {
  private readonly byId = new Map<number, Entry>();
  /** Ascending by (endTimeMs, id) from `head`; removed entries stay (live false) until compacted. */
  private order: Entry[] = [];
  private head = 0;
  private dead = 0;
  /** Pending jobs with a dependency, and some that no longer are (pruned when read). */
  private readonly waiting = new Set<number>();

  constructor(private readonly state: ControllerState) {
    const finished: Entry[] = [];
    for (const j of state.jobs.values()) {
      if (isFinished(j)) finished.push(this.entryOf(j));
      else if (j.state === 'PEND' && j.dependency !== null) this.waiting.add(j.id);
    }
    finished.sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
    this.order = finished;
  }

  private entryOf(j: Job): Entry {
    const e: Entry = { id: j.id, endTimeMs: j.endTimeMs, live: true };
    this.byId.set(j.id, e);
    return e;
  }

  /** Finished jobs in the state. */
  get size(): number {
    return this.byId.size;
  }

  has(id: number): boolean {
    return this.byId.has(id);
  }

  /** The job just finished (its endTimeMs set). */
  finished(j: Job): void {
    this.removed(j.id);
    const e = this.entryOf(j);
    const o = this.order;
    if (o.length === this.head || !before(e, o[o.length - 1]!)) {
      o.push(e);
      return;
    }
    // Out of order (a worker's end time before one already reported): binary search.
    let lo = this.head;
    let hi = o.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (before(o[mid]!, e)) lo = mid + 1;
      else hi = mid;
    }
    o.splice(lo, 0, e);
  }

  /** The job is no longer finished (requeued, restarted) or left the state. */
  removed(id: number): void {
    const e = this.byId.get(id);
    if (e === undefined) return;
    this.byId.delete(id);
    e.live = false;
    this.dead++;
    const o = this.order;
    while (this.head < o.length && !o[this.head]!.live) {
      this.head++;
      this.dead--;
    }
    if (this.dead >= COMPACT_AT && this.dead > this.byId.size) {
      this.order = o.filter((x, i) => i >= this.head && x.live);
      this.head = 0;
      this.dead = 0;
    } else if (this.head >= COMPACT_AT && this.head * 2 > o.length) {
      this.order = o.slice(this.head);
      this.head = 0;
    }
  }

  /** The job is pending and may have a dependency (a submit, or back to PEND). */
  pending(j: Job): void {
    if (j.dependency !== null) this.waiting.add(j.id);
  }

  /** The finished jobs' ids, oldest end first (then by id). */
  *ascending(): Generator<number> {
    const o = this.order;
    for (let i = this.head; i < o.length; i++) if (o[i]!.live) yield o[i]!.id;
  }

  /** The finished job that ended first, or null. */
  oldest(): Job | null {
    for (const id of this.ascending()) return this.state.jobs.get(id) ?? null;
    return null;
  }

  /** The pending jobs with a dependency, in id order; those that no longer are leave the set. */
  pendingWithDependency(): Job[] {
    const out: Job[] = [];
    for (const id of this.waiting) {
      const j = this.state.jobs.get(id);
      if (j === undefined || j.state !== 'PEND' || j.dependency === null) this.waiting.delete(id);
      else out.push(j);
    }
    return out.sort((a, b) => a.id - b.id);
  }

  /** What the index says differs from a walk of the jobs: one line each (invariants.ts). */
  violations(): string[] {
    const out: string[] = [];
    let finished = 0;
    for (const j of this.state.jobs.values()) {
      if (isFinished(j)) {
        finished++;
        const e = this.byId.get(j.id);
        if (e === undefined) out.push(`finished job ${j.id} is missing from the finished-job index`);
        else if (e.endTimeMs !== j.endTimeMs)
          out.push(`the finished-job index has job ${j.id} ending at ${e.endTimeMs}, not ${j.endTimeMs}`);
      } else if (j.state === 'PEND' && j.dependency !== null && !this.waiting.has(j.id))
        out.push(`pending job ${j.id} with a dependency is missing from the finished-job index`);
      else if (isRunning(j) && this.byId.has(j.id)) out.push(`running job ${j.id} is in the finished-job index`);
    }
    if (finished !== this.byId.size)
      out.push(`the finished-job index holds ${this.byId.size} jobs, the state ${finished} finished ones`);
    let prev: Entry | null = null;
    for (let i = this.head; i < this.order.length; i++) {
      const e = this.order[i]!;
      if (!e.live) continue;
      if (prev !== null && before(e, prev)) out.push(`the finished-job index is out of order at job ${e.id}`);
      prev = e;
    }
    return out;
  }
}

const INDEXES = new WeakMap<ControllerState, FinishedIndex>();

/** The state's index, built on first use. */
export function finishedIndex(state: ControllerState): FinishedIndex {
  let ix = INDEXES.get(state);
  if (ix === undefined) INDEXES.set(state, (ix = new FinishedIndex(state)));
  return ix;
}

/** The state's index if it was built (nothing to keep up to date otherwise). */
export const builtIndex = (state: ControllerState): FinishedIndex | undefined => INDEXES.get(state);

/** Apply: `job` just became DONE or EXIT, its endTimeMs set. */
export function noteFinished(state: ControllerState, job: Job): void {
  INDEXES.get(state)?.finished(job);
}

/** Apply: `job` went back to PEND (requeue, restart), or left the state (clean). */
export function noteUnfinished(state: ControllerState, job: Job): void {
  const ix = INDEXES.get(state);
  if (ix === undefined) return;
  ix.removed(job.id);
  if (job.state === 'PEND') ix.pending(job);
}

/** Apply: a new pending job (a submit, an array's element). */
export function notePending(state: ControllerState, job: Job): void {
  INDEXES.get(state)?.pending(job);
}
