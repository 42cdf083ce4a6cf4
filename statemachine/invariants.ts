// What holds of every ControllerState that apply (or restore) produces, checked in one place: the
// tests run it after every apply, the controller at snapshot time, the simulator after each step
// (LogCabin's invariants checker, TigerBeetle's assertions). A violation is a bug in apply, never a
// user error, so the checker lists every violation it finds rather than stopping at the first.
//
// Only rules apply.ts really maintains are here (read it before adding one). Pure and O(jobs +
// sessions + usage): it reads each job's own fields and never decodes a finished job's spec or
// dispatch record held lazily (lazy-parts.ts); a running job's record is never lazy. The one
// exception is the name index's check (name-index.ts), when that index is built: it reads every
// plain job's name, as the index's own build did.

import { arrayIdOf, elementId, formatJobId, isElementId } from '../model/job-id.js';
import { SESSION_TTL_MS, SESSIONS_MAX } from './sessions.js';
import { finishedIndex } from './finished-index.js';
import { builtNameIndex } from './name-index.js';
import { isRunning, JOB_EVENTS_MAX, JOBS_MAX, type ControllerState, type Job, type JobArray } from './state.js';
import { account, emptyUsage, type Usage } from './usage.js';
import type { ClusterConfig } from '../model/config-types.js';

/** The state broke at least one invariant: a bug in apply or restore. The message lists them all. */
export class StateInvariantError extends Error {
  override readonly name = 'StateInvariantError';
  constructor(readonly violations: readonly string[]) {
    super(
      `the controller state breaks ${violations.length} invariant${violations.length === 1 ? '' : 's'}:\n- ${violations.join('\n- ')}`,
    );
  }
}

/** Throws StateInvariantError naming every violation; returns when the state is sound. */
export function checkStateInvariants(state: ControllerState): void {
  const v = stateInvariantViolations(state);
  if (v.length > 0) throw new StateInvariantError(v);
}

/**
 * Every invariant the state breaks, one line each; empty when it is sound. With `index` (the tests'
 * default), the derived end-time index (built here on first check, then kept by apply) is checked
 * against the jobs too.
 */
export function stateInvariantViolations(state: ControllerState, index = true): string[] {
  const walk = new StateInvariantWalk(state);
  for (const [key, job] of state.jobs) walk.job(key, job);
  const out = walk.finish();
  if (index) out.push(...finishedIndex(state).violations());
  // Checked only once built (a dependency by name built it): building it here would read every
  // job's name, decoding those a restored state holds in the snapshot's bytes.
  if (index) out.push(...(builtNameIndex(state)?.violations() ?? []));
  return out;
}

const isCount = (n: number): boolean => Number.isSafeInteger(n) && n >= 0;

/**
 * The invariants of a state as it is at construction, its jobs given one at a time (`job`, in the
 * table's order) and the verdict at the end (`finish`). Everything but the jobs is read, or copied,
 * at construction: a snapshot being encoded feeds it each job as it writes it (the job as it was at
 * the snapshot's index, snapshot.ts), so that the check of a million jobs is sliced with the
 * encoding instead of holding the event loop in one piece. The derived end-time index is not
 * checked here (stateInvariantViolations does, in the tests).
 */
export class StateInvariantWalk {
  private readonly counters: string[] = [];
  private readonly jobs: string[] = [];
  private readonly sessions: string[] = [];
  private readonly appliedIndex: number;
  private readonly nextJobId: number;
  private readonly logTimeMs: number;
  private readonly jobsCleaned: number;
  private readonly hasConfig: boolean;
  private readonly cluster: ClusterConfig | null;
  private readonly arrays: ReadonlyMap<number, JobArray>;
  /** What the state holds as usage, copied, and what its running jobs add up to. */
  private readonly held: Usage;
  private readonly rebuilt = emptyUsage();
  private prevId = 0;
  private prevOwner = 0;
  private count = 0;
  private finished = 0;
  private owners: number;

  constructor(state: ControllerState) {
    this.appliedIndex = state.appliedIndex;
    this.nextJobId = state.nextJobId;
    this.logTimeMs = state.logTimeMs;
    this.jobsCleaned = state.jobsCleaned;
    this.hasConfig = state.config !== null;
    this.cluster = state.config?.cluster ?? null;
    this.arrays = new Map(state.arrays);
    this.owners = state.arrays.size;
    this.held = copyUsage(state.usage);
    for (const a of state.arrays.values())
      if (!state.jobs.has(elementId(a.id, a.indices[0] ?? 0)) && elementsLeft(state, a) === 0)
        this.jobs.push(`job array ${a.id} has no element left but is still in the state`);
    checkSessions(state, this.sessions);
  }

  /** The next job of the table, under `key`. */
  job(key: number, job: Job): void {
    const out = this.jobs;
    this.count++;
    if (job.state === 'DONE' || job.state === 'EXIT') this.finished++;
    if (!isElementId(key)) this.owners++;
    if (job.id !== key) out.push(`job ${key} is stored under the wrong key: its id is ${job.id}`);
    if (!Number.isSafeInteger(job.id) || job.id < 1) out.push(`job ${key}: id is not a whole number ≥ 1`);
    // An array element sits under its array's id (model/job-id.ts), its elements in index order.
    const owner = isElementId(job.id) ? arrayIdOf(job.id) : job.id;
    if (owner >= this.nextJobId) out.push(`job ${key}: id not below nextJobId ${this.nextJobId}`);
    if (isElementId(job.id) ? job.id <= this.prevId || owner < this.prevOwner : owner <= this.prevOwner)
      out.push(`job ${key}: out of id order (after job ${formatJobId(this.prevId)})`);
    if (isElementId(job.id)) {
      const a = this.arrays.get(owner);
      if (a === undefined) out.push(`job ${key}: an element of job array ${owner}, which is not in the state`);
      else if (job.spec !== a.spec || job.user !== a.user || job.dependency !== a.dependency)
        out.push(`job ${key}: does not share its array's values`);
    }
    this.prevId = job.id;
    this.prevOwner = owner;
    if (!isCount(job.runNumber)) out.push(`job ${key}: runNumber ${job.runNumber} is not a whole number ≥ 0`);
    if (!isCount(job.requeueCount)) out.push(`job ${key}: requeueCount ${job.requeueCount} is not a whole number ≥ 0`);
    if (job.submitTimeMs > this.logTimeMs)
      out.push(`job ${key}: submitTimeMs ${job.submitTimeMs} after logTimeMs ${this.logTimeMs}`);
    if (job.dispatchTimeMs > this.logTimeMs)
      out.push(`job ${key}: dispatchTimeMs ${job.dispatchTimeMs} after logTimeMs ${this.logTimeMs}`);
    checkJobFields(job, key, out);
    if (isRunning(job) && job.record !== null) account(this.rebuilt, this.cluster, job.record, 1);
  }

  /** Every violation found, one line each (counters, jobs, sessions, usage). */
  finish(): string[] {
    const out = this.counters;
    this.checkCounters(out);
    out.push(...this.jobs, ...this.sessions);
    checkUsage(this.held, this.rebuilt, out);
    return out;
  }

  private checkCounters(out: string[]): void {
    if (!isCount(this.appliedIndex)) out.push(`appliedIndex ${this.appliedIndex} is not a whole number ≥ 0`);
    if (!Number.isSafeInteger(this.nextJobId) || this.nextJobId < 1)
      out.push(`nextJobId ${this.nextJobId} is not a whole number ≥ 1`);
    if (!isCount(this.logTimeMs)) out.push(`logTimeMs ${this.logTimeMs} is not a whole number ≥ 0`);
    // Each accepted submit is one log entry, so ids handed out never outnumber the entries applied.
    if (this.nextJobId - 1 > this.appliedIndex)
      out.push(`nextJobId ${this.nextJobId} but only ${this.appliedIndex} entries applied`);
    const active = this.count - this.finished;
    if (active > JOBS_MAX) out.push(`${active} active jobs, above JOBS_MAX ${JOBS_MAX}`);
    if (!isCount(this.jobsCleaned)) out.push(`jobsCleaned ${this.jobsCleaned} is not a whole number ≥ 0`);
    // Every id below nextJobId was given to a job (or an array of one or more elements) that is in
    // the state or was cleaned: exactly one job per id while no array was ever submitted.
    const entries = this.count + this.jobsCleaned;
    if (entries < this.nextJobId - 1 || this.owners > this.nextJobId - 1)
      out.push(`${this.count} jobs and ${this.jobsCleaned} cleaned, but ${this.nextJobId - 1} ids handed out`);
    if (!this.hasConfig && (this.count > 0 || this.nextJobId !== 1)) {
      out.push(
        `no configuration but ${this.count} jobs and nextJobId ${this.nextJobId} (a submit needs a configuration)`,
      );
    }
  }
}

function elementsLeft(state: ControllerState, a: JobArray): number {
  let n = 0;
  for (const i of a.indices) if (state.jobs.has(elementId(a.id, i))) n++;
  return n;
}

function copyUsage(u: Usage): Usage {
  const c = emptyUsage();
  for (const [k, n] of u.slots) c.slots.set(k, n);
  for (const [k, n] of u.clusterRusage) c.clusterRusage.set(k, n);
  for (const [h, m] of u.hostRusage) c.hostRusage.set(h, new Map(m));
  return c;
}

// The job checks below allocate nothing for a sound job (a snapshot of a million jobs runs them
// all): the place (`job N (STATE)`) is built only with a violation.

function bad(job: Job, key: number, out: string[], what: string): void {
  out.push(`job ${key} (${job.state}): ${what}`);
}

function noRun(job: Job, key: number, out: string[]): void {
  if (job.started) bad(job, key, out, 'started is set without a run');
  if (job.pid !== 0) bad(job, key, out, `pid ${job.pid} without a run`);
  if (job.dispatchTimeMs !== 0) bad(job, key, out, `dispatchTimeMs ${job.dispatchTimeMs} without a run`);
  if (job.startTimeMs !== 0) bad(job, key, out, `startTimeMs ${job.startTimeMs} without a run`);
}

function notStartedYet(job: Job, key: number, out: string[]): void {
  if (!job.started && job.pid !== 0) bad(job, key, out, `pid ${job.pid} but not started`);
  if (!job.started && job.startTimeMs !== 0) bad(job, key, out, `startTimeMs ${job.startTimeMs} but not started`);
}

function dispatched(job: Job, key: number, out: string[], what: string): void {
  if (job.record === null) bad(job, key, out, 'has no dispatch record');
  if (job.runNumber < 1) bad(job, key, out, `runNumber ${job.runNumber}: a ${what} job has had a run`);
}

function notEnded(job: Job, key: number, out: string[]): void {
  if (job.endTimeMs !== 0) bad(job, key, out, `endTimeMs ${job.endTimeMs} but not ended`);
  if (job.exitCode !== 0) bad(job, key, out, `exitCode ${job.exitCode} but not ended`);
  if (job.signal !== null) bad(job, key, out, `signal ${job.signal} but not ended`);
  if (job.reason !== null) bad(job, key, out, `reason "${job.reason}" but not ended`);
}

/** The fields each state allows (apply.ts: applySubmit, applyDispatch, applyStatus, clearRun, kill). */
function checkJobFields(job: Job, key: number, out: string[]): void {
  if (job.heldBy !== null && job.state !== 'PEND') bad(job, key, out, `held by ${job.heldBy} but not pending`);
  if (job.events.length > JOB_EVENTS_MAX)
    bad(job, key, out, `${job.events.length} events, above JOB_EVENTS_MAX ${JOB_EVENTS_MAX}`);
  switch (job.state) {
    case 'PEND':
      if (job.record !== null) bad(job, key, out, 'holds a dispatch record');
      if (job.killRequestedBy !== null) bad(job, key, out, `kill requested by ${job.killRequestedBy}`);
      noRun(job, key, out);
      notEnded(job, key, out);
      return;
    case 'RUN':
    case 'SUSP':
      dispatched(job, key, out, 'running');
      if (job.lastDecline !== null) bad(job, key, out, `lastDecline "${job.lastDecline}" kept past the dispatch`);
      notStartedYet(job, key, out);
      notEnded(job, key, out);
      return;
    case 'DONE':
      dispatched(job, key, out, 'done');
      if (job.exitCode !== 0) bad(job, key, out, `exitCode ${job.exitCode}`);
      if (job.signal !== null) bad(job, key, out, `signal ${job.signal}`);
      if (job.killRequestedBy !== null) bad(job, key, out, `kill requested by ${job.killRequestedBy}`);
      if (job.lastDecline !== null) bad(job, key, out, `lastDecline "${job.lastDecline}"`);
      notStartedYet(job, key, out);
      return;
    case 'EXIT':
      checkExit(job, key, out);
      return;
    default:
      bad(job, key, out, 'unknown state');
  }
}

function checkExit(job: Job, key: number, out: string[]): void {
  if (job.lastDecline !== null) bad(job, key, out, `lastDecline "${job.lastDecline}"`);
  if (job.record === null) {
    // Killed while pending: it never ran since its last (re)queue.
    if (job.reason === null) bad(job, key, out, 'killed while pending without a reason');
    if (job.killRequestedBy !== null) bad(job, key, out, `kill requested by ${job.killRequestedBy} while pending`);
    if (job.exitCode !== 0 || job.signal !== null)
      bad(job, key, out, `exitCode ${job.exitCode} / signal ${job.signal} without a run`);
    noRun(job, key, out);
  } else {
    if (job.runNumber < 1) bad(job, key, out, `runNumber ${job.runNumber} with a dispatch record`);
    notStartedYet(job, key, out);
  }
}

function checkSessions(state: ControllerState, out: string[]): void {
  if (state.sessions.size > SESSIONS_MAX)
    out.push(`${state.sessions.size} sessions, above SESSIONS_MAX ${SESSIONS_MAX}`);
  // recordSession appends with the (monotone) log time, so the least recently used come first.
  let prevMs = -Infinity;
  for (const [key, s] of state.sessions) {
    const at = `session ${key}`;
    if (s.clientId !== key) out.push(`${at} is stored under the wrong key: its client is ${s.clientId}`);
    if (!isCount(s.lastSequence)) out.push(`${at}: lastSequence ${s.lastSequence} is not a whole number ≥ 0`);
    if (s.lastTimeMs > state.logTimeMs)
      out.push(`${at}: lastTimeMs ${s.lastTimeMs} after logTimeMs ${state.logTimeMs}`);
    if (s.lastTimeMs + SESSION_TTL_MS < state.logTimeMs)
      out.push(`${at}: expired (lastTimeMs ${s.lastTimeMs}, logTimeMs ${state.logTimeMs}) but kept`);
    if (s.lastTimeMs < prevMs)
      out.push(`${at}: out of least-recently-used order (lastTimeMs ${s.lastTimeMs} after ${prevMs})`);
    prevMs = s.lastTimeMs;
  }
}

/** The usage must be exactly what a rebuild from the running jobs gives (integers, milli-units). */
function checkUsage(u: Usage, fresh: Usage, out: string[]): void {
  diffAmounts('usage.slots', u.slots, fresh.slots, out);
  diffAmounts('usage.clusterRusage', u.clusterRusage, fresh.clusterRusage, out);
  for (const host of new Set([...u.hostRusage.keys(), ...fresh.hostRusage.keys()])) {
    diffAmounts(
      `usage.hostRusage ${host}`,
      u.hostRusage.get(host) ?? new Map(),
      fresh.hostRusage.get(host) ?? new Map(),
      out,
    );
    if (u.hostRusage.get(host)?.size === 0) out.push(`usage.hostRusage ${host}: an empty map is kept`);
  }
}

function diffAmounts(
  where: string,
  held: ReadonlyMap<string, number>,
  rebuilt: ReadonlyMap<string, number>,
  out: string[],
): void {
  for (const [k, n] of held) {
    if (!Number.isSafeInteger(n)) out.push(`${where} ${k}: ${n} is not a whole number`);
    const r = rebuilt.get(k);
    if (r !== n) out.push(`${where} ${k}: holds ${n}, a rebuild from the running jobs gives ${r ?? 'nothing'}`);
  }
  for (const [k, r] of rebuilt)
    if (!held.has(k)) out.push(`${where} ${k}: holds nothing, a rebuild from the running jobs gives ${r}`);
}
