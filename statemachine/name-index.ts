// A derived index of the state's plain jobs and arrays by (user, job name), so that a dependency
// by name (`-w "done(myjob)"`, dependency.ts lastJobNamed) reads the ids of that name instead of
// every job in the state: a walk of a million restored jobs decodes each one's name from the
// snapshot's bytes (lazy-parts.ts), 180 ms to 1 s in the apply of every such submit.
//
// A name is keyed by its hash (wire/text-hash.ts), which a restored job's name gives from its
// bytes in place: the build after a restore makes no string per job, and the index holds numbers
// only. What it holds, per user and hash: a list of ids in ascending order that contains every
// plain job of the user whose spec.jobName has that hash and every array of the user whose name
// (without its indices) has it; array elements are not in it, as the walk skips them. The list may
// also hold ids of another name of the same hash (a collision), and ids that have left the name
// (cleaned, renamed by a modify). A lookup walks the list from its highest id and answers the first
// that is now of that user and exactly that name (the texts compared), dropping the dead ids at the
// end as it passes them: so the answer is always the walk's, the highest live id of the name. Only
// an id joining a name must be told here (a submit, a modify's new name); an id leaving is told so
// that the memory it held is given back (noteJobLeft, noteArrayLeft, noteRenamed).
//
// Derived data: not in ControllerState, not in the snapshot or the digest. Built from the jobs by
// one walk the first time a state is asked (after a start or a restore, which makes a new state),
// then kept up to date by apply. Pure and deterministic, like the state it is derived from.
// invariants.ts checks a built index against the jobs (the tests run it after every apply).

import { isElementId } from '../model/job-id.js';
import { textHash } from '../wire/capnp-wire.js';
import { HashTable } from './hash-table.js';
import { LazySpecText } from './lazy-parts.js';
import type { JobSpec } from './facts.js';
import type { ControllerState, Job, JobArray } from './state.js';

/** Several ids of one hash: ascending, unique; `dead` counts those told gone (an estimate: it only times compaction). */
interface Many {
  ids: number[];
  dead: number;
}

/** Dead ids are dropped from a list once they are this many and more than half of it. */
const COMPACT_AT = 64;

/** A job name's hash (textHash), from a restored spec's bytes in place; -1: no name. */
export function nameHashOf(spec: JobSpec): number {
  if (spec instanceof LazySpecText) return spec.jobNameHash();
  return spec.jobName === null ? -1 : textHash(spec.jobName);
}

/** The position of `id` in ascending `ids`, or where it would go. */
function search(ids: readonly number[], id: number): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid]! < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class NameIndex {
  /**
   * (user, name hash) → one id (> 0), or -(k + 1) for the list `lists[k]`. Most names are one job's:
   * a list is made only for a key of several.
   */
  private readonly table: HashTable;
  private readonly lists: (Many | undefined)[] = [];
  private readonly freeLists: number[] = [];
  /** The last user's hash (the build meets one user many times in a row). */
  private lastUser = '';
  private lastUserHash = textHash('');

  constructor(private readonly state: ControllerState) {
    // Sized for the plain jobs and arrays (the jobs less the arrays' elements, at most), so that
    // the build does not grow it.
    let elements = 0;
    for (const a of state.arrays.values()) elements += a.indices.length;
    this.table = new HashTable(Math.max(0, state.jobs.size - elements) + state.arrays.size);
    for (const a of state.arrays.values()) this.add(a.user, textHash(a.name), a.id);
    for (const j of state.jobs.values()) if (!isElementId(j.id)) this.add(j.user, nameHashOf(j.spec), j.id);
  }

  /** The table's key of `user`'s name of hash `h`: keys of two users or two names may be equal (compared on use). */
  private key(user: string, h: number): number {
    if (user !== this.lastUser) {
      this.lastUser = user;
      this.lastUserHash = textHash(user);
    }
    return (Math.imul(this.lastUserHash, 0x85ebca6b) ^ h) & 0x3fffffff;
  }

  /** The keys held: one every id of which left is given back. */
  get size(): number {
    return this.table.size;
  }

  /** Whether `id` is now a plain job or an array of `user` named `name` (what the walk counts). */
  private named(user: string, name: string, id: number): boolean {
    const a = this.state.arrays.get(id);
    if (a !== undefined) return a.user === user && a.name === name;
    if (isElementId(id)) return false;
    const j = this.state.jobs.get(id);
    return j !== undefined && j.user === user && j.spec.jobName === name;
  }

  private newList(ids: number[]): number {
    const k = this.freeLists.pop() ?? this.lists.length;
    this.lists[k] = { ids, dead: 0 };
    return -(k + 1);
  }

  /** `id` (now a plain job or an array of `user` whose name has hash `h`) joins that name; -1: no name. */
  add(user: string, h: number, id: number): void {
    if (h < 0) return;
    const key = this.key(user, h);
    const v = this.table.get(key);
    if (v === 0) this.table.set(key, id);
    else if (v > 0) {
      if (v !== id) this.table.set(key, this.newList(v < id ? [v, id] : [id, v]));
    } else {
      const many = this.lists[-v - 1]!;
      const list = many.ids;
      // Ids come in ascending order (submits), but a modify can bring an older job to a name.
      if (list[list.length - 1]! < id) list.push(id);
      else {
        const at = search(list, id);
        // Already there: it left the name and came back (two modifies).
        if (list[at] === id) many.dead = Math.max(0, many.dead - 1);
        else list.splice(at, 0, id);
      }
    }
  }

  /** `id` is no longer of `user`'s name of hash `h` (it left the state, or a modify renamed it); -1: no name. */
  left(user: string, h: number, id: number): void {
    if (h < 0) return;
    const key = this.key(user, h);
    const v = this.table.get(key);
    if (v === 0) return;
    if (v > 0) {
      if (v === id && !this.listedUnder(key, id)) this.table.delete(key);
      return;
    }
    const many = this.lists[-v - 1]!;
    many.dead++;
    // The dead ids at the end go now, the others in one filter once they are many: each id is
    // dropped once, so a list costs O(1) per id, amortised. An id of the same key but another
    // user or name is not dead: `live` keeps every id listed under the key.
    const live = (x: number): boolean => this.listedUnder(key, x);
    if (this.trim(key, v, live) && many.dead >= COMPACT_AT && many.dead * 2 > many.ids.length) {
      many.ids = many.ids.filter(live);
      many.dead = 0;
      // The last id is live (trim), so the list is not empty.
      if (many.ids.length === 1) this.single(key, v, many.ids[0]!);
    }
  }

  /** Whether `id` is now a plain job or an array whose user and name make `key`. */
  private listedUnder(key: number, id: number): boolean {
    const a = this.state.arrays.get(id);
    if (a !== undefined) return this.key(a.user, textHash(a.name)) === key;
    if (isElementId(id)) return false;
    const j = this.state.jobs.get(id);
    if (j === undefined) return false;
    const h = nameHashOf(j.spec);
    return h >= 0 && this.key(j.user, h) === key;
  }

  /** The key, whose value is list `v`, holds one id now: the list is given back. */
  private single(key: number, v: number, id: number): void {
    this.lists[-v - 1] = undefined;
    this.freeLists.push(-v - 1);
    this.table.set(key, id);
  }

  private forget(key: number, v: number): void {
    if (v < 0) {
      this.lists[-v - 1] = undefined;
      this.freeLists.push(-v - 1);
    }
    this.table.delete(key);
  }

  /** Drops the dead ids at the end of list `v` of `key`; false when none is left (the key forgotten). */
  private trim(key: number, v: number, live: (id: number) => boolean): boolean {
    const many = this.lists[-v - 1]!;
    const list = many.ids;
    while (list.length > 0 && !live(list[list.length - 1]!)) {
      list.pop();
      many.dead = Math.max(0, many.dead - 1);
    }
    if (list.length === 0) this.forget(key, v);
    else if (list.length === 1) this.single(key, v, list[0]!);
    return list.length > 0;
  }

  /** The user's most recent plain job or array named `name` (the highest id); null: none. */
  last(user: string, name: string): number | null {
    const key = this.key(user, textHash(name));
    const v = this.table.get(key);
    if (v === 0) return null;
    if (v > 0) {
      if (this.named(user, name, v)) return v;
      if (!this.listedUnder(key, v)) this.forget(key, v);
      return null;
    }
    const many = this.lists[-v - 1]!;
    if (!this.trim(key, v, (x) => this.listedUnder(key, x))) return null;
    // From the highest: past the ids of another user or name of the same key (a collision: rare).
    const list = many.ids;
    for (let i = list.length - 1; i >= 0; i--) if (this.named(user, name, list[i]!)) return list[i]!;
    return null;
  }

  /** What the index says differs from a walk of the jobs and arrays: one line each (invariants.ts). */
  violations(): string[] {
    const out: string[] = [];
    const check = (user: string, h: number, id: number): void => {
      if (h < 0) return;
      const v = this.table.get(this.key(user, h));
      const ids = v < 0 ? this.lists[-v - 1]?.ids : undefined;
      const found = v > 0 ? v === id : ids !== undefined && ids[search(ids, id)] === id;
      if (!found) out.push(`job ${id} of ${user} is missing from the name index (its name's hash ${h})`);
    };
    for (const a of this.state.arrays.values()) check(a.user, textHash(a.name), a.id);
    for (const j of this.state.jobs.values()) if (!isElementId(j.id)) check(j.user, nameHashOf(j.spec), j.id);
    for (const [key, v] of this.table.entries()) {
      if (v > 0) continue;
      const what = `the name index's ids of key ${key}`;
      const ids = this.lists[-v - 1]?.ids;
      if (ids === undefined) out.push(`${what} are a list given back`);
      else if (ids.length < 2) out.push(`${what} are a list of ${ids.length}`);
      else
        for (let i = 1; i < ids.length; i++)
          if (ids[i - 1]! >= ids[i]!) out.push(`${what} are not ascending at ${ids[i]}`);
    }
    return out;
  }
}

const INDEXES = new WeakMap<ControllerState, NameIndex>();

/** The state's name index, built on first use (one walk of the jobs). */
export function nameIndex(state: ControllerState): NameIndex {
  let ix = INDEXES.get(state);
  if (ix === undefined) INDEXES.set(state, (ix = new NameIndex(state)));
  return ix;
}

/** The state's name index if it was built (nothing to keep up to date otherwise). */
export const builtNameIndex = (state: ControllerState): NameIndex | undefined => INDEXES.get(state);

/** Apply: `id`, a new plain job or array of `user` (a submit), has the name `name`. */
export function noteNamed(state: ControllerState, user: string, name: string | null, id: number): void {
  INDEXES.get(state)?.add(user, name === null ? -1 : textHash(name), id);
}

/** Apply: `job` left the state (a clean); an array element is not in the index. */
export function noteJobLeft(state: ControllerState, job: Job): void {
  const ix = INDEXES.get(state);
  if (ix !== undefined && !isElementId(job.id)) ix.left(job.user, nameHashOf(job.spec), job.id);
}

/** Apply: `array` left the state with its last element (a clean). */
export function noteArrayLeft(state: ControllerState, array: JobArray): void {
  INDEXES.get(state)?.left(array.user, textHash(array.name), array.id);
}

/** Apply: a modify replaced the spec of plain job `job`, whose name was `before`. */
export function noteRenamed(state: ControllerState, job: Job, before: string | null): void {
  const ix = INDEXES.get(state);
  if (ix === undefined || job.spec.jobName === before) return;
  ix.left(job.user, before === null ? -1 : textHash(before), job.id);
  ix.add(job.user, nameHashOf(job.spec), job.id);
}
