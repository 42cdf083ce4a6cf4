// Job dependencies (`-w`) on the replicated state: resolving a submit's expression (names to job
// ids, unknown references and cycles refused: apply-submit.ts) and evaluating it on the applied
// state (the scheduler's pass, and apply-control.ts for `--dep-never kill`). Pure.
//
// A condition on one job: done(J) holds once J is DONE, exit(J) once it is EXIT, ended(J) once it
// is either, started(J) once it has started (or ended). A whole array (`ID[*]`, or an array's id
// or name without an index) meets a condition when every element does. A condition is FINAL when
// its value can no longer change by the job running on (done(J) with J EXIT is false for good):
// a dependency that is false and final "can never be satisfied" (the job pends saying so, or is
// killed under `--dep-never kill`). A requeue of the referenced job makes it pending again and
// the dependency with it.

import {
  conditionsOf,
  DependencySyntaxError,
  formatDependency,
  formatRef,
  parseDependency,
  type DepExpr,
  type DepRef,
} from '../model/dependency.js';
import { elementId, formatJobId, isElementId } from '../model/job-id.js';
import { finishedIndex } from './finished-index.js';
import { nameIndex } from './name-index.js';
import { isRunning, type ControllerState, type Job, type JobArray, type JobDependency } from './state.js';

/** Builds a dependency from its stored parts (the resolved text is parsed; it was written by formatDependency). */
export function dependencyOf(text: string, resolved: string, killWhenNever: boolean): JobDependency {
  return { text, resolved, expr: parseDependency(resolved), killWhenNever };
}

export type Resolution =
  { readonly ok: true; readonly dependency: JobDependency } | { readonly ok: false; readonly message: string };

/**
 * Resolves `-w text` for a job about to be submitted by `user` under the id `newId` with the name
 * `ownName` (an array's name without its indices): every job name names the user's most recent
 * job or array of that name; every reference must exist; the job may not depend on itself, nor on
 * a job that (transitively) depends on it.
 */
export function resolveDependency(
  state: ControllerState,
  user: string,
  text: string,
  killWhenNever: boolean,
  newId: number,
  ownName: string | null,
): Resolution {
  const fail = (why: string): Resolution => ({ ok: false, message: `dependency ${JSON.stringify(text)}: ${why}` });
  let expr: DepExpr;
  try {
    expr = parseDependency(text);
  } catch (e) {
    if (e instanceof DependencySyntaxError) return fail(e.message);
    throw e;
  }
  let problem: string | null = null;
  const names = new Map<string, number | null>();
  const resolveRef = (r: DepRef): DepRef => {
    if (problem !== null) return r;
    let id = r.id;
    if (id === null) {
      const name = r.name!;
      let found = names.get(name);
      if (found === undefined) names.set(name, (found = lastJobNamed(state, user, name)));
      if (found === null) {
        problem =
          name === ownName
            ? `a job cannot depend on itself (${formatRef(r)} names this job)`
            : `there is no job named ${name} of user ${user}`;
        return r;
      }
      id = found;
    }
    if (id === newId) {
      problem = `a job cannot depend on itself (job ${newId} is this job)`;
      return r;
    }
    const array = state.arrays.get(id);
    const shown = formatRef({ ...r, id, name: null });
    if (r.index === '*' && array === undefined)
      problem = state.jobs.has(id)
        ? `job ${id} is not a job array, so ${shown} names nothing`
        : `job ${id} does not exist`;
    else if (typeof r.index === 'number') {
      if (array === undefined)
        problem = state.jobs.has(id)
          ? `job ${id} is not a job array, so ${shown} names nothing`
          : `job ${id} does not exist`;
      else if (!state.jobs.has(elementId(id, r.index))) problem = `job array ${id} has no element ${r.index}`;
    } else if (r.index === null && array === undefined && !state.jobs.has(id)) problem = `job ${id} does not exist`;
    return { id, name: null, index: r.index };
  };
  const resolved = mapRefs(expr, resolveRef);
  if (problem !== null) return fail(problem);
  // A cycle: a referenced job that (transitively) depends on the new job. The new job's id is not
  // in the state yet, so only a reference to it by id closes one; checked for every path anyway.
  const cycle = dependencyPathTo(state, refIds(resolved), newId);
  if (cycle !== null) return fail(`it would make a cycle: ${cycle.map(formatJobId).join(' -> ')} -> ${newId}`);
  return { ok: true, dependency: { text, resolved: formatDependency(resolved), expr: resolved, killWhenNever } };
}

function mapRefs(e: DepExpr, f: (r: DepRef) => DepRef): DepExpr {
  switch (e.kind) {
    case 'cond':
      return { kind: 'cond', cond: e.cond, ref: f(e.ref) };
    case 'not':
      return { kind: 'not', expr: mapRefs(e.expr, f) };
    default:
      return { kind: e.kind, left: mapRefs(e.left, f), right: mapRefs(e.right, f) };
  }
}

function refIds(e: DepExpr): number[] {
  return conditionsOf(e).map((c) => c.ref.id!);
}

/**
 * The user's most recent plain job or array named `name` (an array by its name without indices);
 * null: none. Read from the name index (name-index.ts), built on the first call after a restore.
 */
export function lastJobNamed(state: ControllerState, user: string, name: string): number | null {
  return nameIndex(state).last(user, name);
}

/** What lastJobNamed gives, by a walk of every job and array: what the name index must answer (the tests). */
export function lastJobNamedScan(state: ControllerState, user: string, name: string): number | null {
  let best: number | null = null;
  for (const a of state.arrays.values())
    if (a.user === user && a.name === name && (best === null || a.id > best)) best = a.id;
  for (const j of state.jobs.values()) {
    if (isElementId(j.id) || j.user !== user || j.spec.jobName !== name) continue;
    if (best === null || j.id > best) best = j.id;
  }
  return best;
}

/** A path of dependencies from one of `from` to `target` (the ids on it), or null; visits each job once. */
function dependencyPathTo(state: ControllerState, from: readonly number[], target: number): number[] | null {
  const seen = new Set<number>();
  const walk = (id: number, path: number[]): number[] | null => {
    if (id === target) return path;
    if (seen.has(id)) return null;
    seen.add(id);
    const dep = state.arrays.get(id)?.dependency ?? state.jobs.get(id)?.dependency ?? null;
    if (dep === null) return null;
    for (const next of refIds(dep.expr)) {
      const p = walk(next, [...path, id]);
      if (p !== null) return p;
    }
    return null;
  };
  for (const id of from) {
    const p = walk(id, []);
    if (p !== null) return p;
  }
  return null;
}

// ---- evaluation ----

/** A dependency's value now: met, or not; `final` when it can no longer change (and then why). */
export interface DepValue {
  readonly met: boolean;
  readonly final: boolean;
  /** For a final value: the condition that decided it and why (`job 123 exited with 1`). */
  readonly cond?: string;
  readonly why?: string;
}

const NOT_YET: DepValue = { met: false, final: false };

/**
 * Evaluates dependencies on one state, remembering each condition's value (many jobs, and all the
 * elements of an array, share conditions): make one per scheduling pass.
 */
export class DependencyEvaluator {
  private readonly conds = new Map<string, DepValue>();
  private readonly deps = new Map<JobDependency, DepValue>();

  constructor(private readonly state: ControllerState) {}

  value(dep: JobDependency): DepValue {
    let v = this.deps.get(dep);
    if (v === undefined) this.deps.set(dep, (v = this.expr(dep.expr)));
    return v;
  }

  /** The pend reason of a job whose dependency is not met (null when it is met). */
  reason(dep: JobDependency): string | null {
    const v = this.value(dep);
    if (v.met) return null;
    if (v.final) return neverReason(v);
    return `waiting for dependency ${dep.resolved}`;
  }

  private expr(e: DepExpr): DepValue {
    switch (e.kind) {
      case 'cond': {
        const key = formatDependency(e);
        let v = this.conds.get(key);
        if (v === undefined) this.conds.set(key, (v = this.cond(e, key)));
        return v;
      }
      case 'not': {
        const x = this.expr(e.expr);
        return x.final && x.met ? { ...x, met: false, cond: `!${x.cond}` } : { ...x, met: !x.met };
      }
      case 'and': {
        const l = this.expr(e.left);
        if (!l.met && l.final) return l;
        const r = this.expr(e.right);
        if (!r.met && r.final) return r;
        if (l.met && r.met) return { met: true, final: l.final && r.final };
        return NOT_YET;
      }
      case 'or': {
        const l = this.expr(e.left);
        if (l.met && l.final) return l;
        const r = this.expr(e.right);
        if (r.met && r.final) return r;
        if (l.met || r.met) return { met: true, final: false };
        if (l.final && r.final) return l;
        return NOT_YET;
      }
    }
  }

  private cond(e: Extract<DepExpr, { kind: 'cond' }>, text: string): DepValue {
    const id = e.ref.id!;
    const array = e.ref.index === null || e.ref.index === '*' ? this.state.arrays.get(id) : undefined;
    if (array !== undefined) return this.arrayCond(e.cond, array, text);
    const jobId = typeof e.ref.index === 'number' ? elementId(id, e.ref.index) : id;
    return jobCond(e.cond, this.state.jobs.get(jobId), jobId, text);
  }

  private arrayCond(cond: string, array: JobArray, text: string): DepValue {
    let allMet = true;
    let allFinal = true;
    for (const i of array.indices) {
      const id = elementId(array.id, i);
      const v = jobCond(cond, this.state.jobs.get(id), id, text);
      if (!v.met && v.final) return { ...v, why: v.why!.replace(/^job /, 'element ') };
      if (!v.met) allMet = false;
      if (!v.final) allFinal = false;
    }
    return allMet ? { met: true, final: allFinal } : NOT_YET;
  }
}

/** `dependency done(123) can never be satisfied: job 123 exited with 1`. */
export function neverReason(v: DepValue): string {
  return `dependency ${v.cond} can never be satisfied: ${v.why}`;
}

function ended(j: Job): string {
  if (j.state === 'DONE') return `job ${formatJobId(j.id)} finished successfully (DONE)`;
  if (j.signal !== null) return `job ${formatJobId(j.id)} was ended by ${j.signal}`;
  if (j.exitCode !== 0) return `job ${formatJobId(j.id)} exited with ${j.exitCode}`;
  return `job ${formatJobId(j.id)} ended EXIT${j.reason !== null ? ` (${j.reason})` : ''}`;
}

function jobCond(cond: string, j: Job | undefined, id: number, text: string): DepValue {
  if (j === undefined)
    return cond === 'ended' || cond === 'started'
      ? { met: true, final: true, cond: text, why: `job ${formatJobId(id)} has left the controllers' state` }
      : { met: false, final: true, cond: text, why: `job ${formatJobId(id)} has left the controllers' state` };
  const finished = j.state === 'DONE' || j.state === 'EXIT';
  switch (cond) {
    case 'done':
      return j.state === 'DONE' || j.state === 'EXIT'
        ? { met: j.state === 'DONE', final: true, cond: text, why: ended(j) }
        : NOT_YET;
    case 'exit':
      return finished ? { met: j.state === 'EXIT', final: true, cond: text, why: ended(j) } : NOT_YET;
    case 'ended':
      return finished ? { met: true, final: true, cond: text, why: ended(j) } : NOT_YET;
    default: // started
      if (finished) return { met: true, final: true, cond: text, why: ended(j) };
      return isRunning(j) && j.started ? { met: true, final: false } : NOT_YET;
  }
}

/**
 * The ids of finished jobs that a pending job's dependency names (they must stay in the state until
 * it is decided: apply-clean.ts and retention.ts keep them). Linear in the pending jobs with a dependency
 * (finished-index.ts keeps them).
 */
export function referencedByPending(state: ControllerState): Set<number> {
  const out = new Set<number>();
  const add = (dep: JobDependency): void => {
    for (const c of conditionsOf(dep.expr)) {
      const id = c.ref.id!;
      const array = c.ref.index === null || c.ref.index === '*' ? state.arrays.get(id) : undefined;
      if (array !== undefined) for (const i of array.indices) out.add(elementId(id, i));
      else out.add(typeof c.ref.index === 'number' ? elementId(id, c.ref.index) : id);
    }
  };
  const seen = new Set<JobDependency>();
  for (const j of finishedIndex(state).pendingWithDependency()) {
    const dep = j.dependency!; // pendingWithDependency gives only jobs with one
    if (seen.has(dep)) continue;
    seen.add(dep);
    add(dep);
  }
  return out;
}
