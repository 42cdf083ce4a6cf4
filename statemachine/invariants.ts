// What holds of every ControllerState that apply (or restore) produces, checked in one place: the
// tests run it after every apply, the controller at snapshot time, the simulator after each step
// (LogCabin's invariants checker, TigerBeetle's assertions). A violation is a bug in apply, never a
// user error, so the checker lists every violation it finds rather than stopping at the first.
//
// Only rules apply.ts really maintains are here (read it before adding one). Pure and O(jobs +
// sessions + usage): it reads each job's own fields and never decodes a finished job's spec or
// dispatch record held lazily (lazy-parts.ts); a running job's record is never lazy.

import { arrayIdOf, elementId, formatJobId, isElementId } from '../model/job-id.js';
import { SESSION_TTL_MS, SESSIONS_MAX } from './sessions.js';
import { countActiveJobs } from './retention.js';
import { JOB_EVENTS_MAX, JOBS_MAX, type ControllerState, type Job, type JobArray } from './state.js';
import { emptyUsage, rebuildUsage, type Usage } from './usage.js';

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

/** Every invariant the state breaks, one line each; empty when it is sound. */
export function stateInvariantViolations(state: ControllerState): string[] {
  const out: string[] = [];
  checkCounters(state, out);
  checkJobs(state, out);
  checkSessions(state, out);
  checkUsage(state, out);
  return out;
}

const isCount = (n: number): boolean => Number.isSafeInteger(n) && n >= 0;

function checkCounters(state: ControllerState, out: string[]): void {
  if (!isCount(state.appliedIndex)) out.push(`appliedIndex ${state.appliedIndex} is not a whole number ≥ 0`);
  if (!Number.isSafeInteger(state.nextJobId) || state.nextJobId < 1)
    out.push(`nextJobId ${state.nextJobId} is not a whole number ≥ 1`);
  if (!isCount(state.logTimeMs)) out.push(`logTimeMs ${state.logTimeMs} is not a whole number ≥ 0`);
  // Each accepted submit is one log entry, so ids handed out never outnumber the entries applied.
  if (state.nextJobId - 1 > state.appliedIndex)
    out.push(`nextJobId ${state.nextJobId} but only ${state.appliedIndex} entries applied`);
  if (state.jobs.size > JOBS_MAX) {
    const active = countActiveJobs(state);
    if (active > JOBS_MAX) out.push(`${active} active jobs, above JOBS_MAX ${JOBS_MAX}`);
  }
  if (!isCount(state.jobsCleaned)) out.push(`jobsCleaned ${state.jobsCleaned} is not a whole number ≥ 0`);
  // Every id below nextJobId was given to a job (or an array of one or more elements) that is in
  // the state or was cleaned: exactly one job per id while no array was ever submitted.
  const entries = state.jobs.size + state.jobsCleaned;
  let owners = state.arrays.size;
  for (const id of state.jobs.keys()) if (!isElementId(id)) owners++;
  if (entries < state.nextJobId - 1 || owners > state.nextJobId - 1)
    out.push(`${state.jobs.size} jobs and ${state.jobsCleaned} cleaned, but ${state.nextJobId - 1} ids handed out`);
  if (state.config === null && (state.jobs.size > 0 || state.nextJobId !== 1)) {
    out.push(
      `no configuration but ${state.jobs.size} jobs and nextJobId ${state.nextJobId} (a submit needs a configuration)`,
    );
  }
}

function elementsLeft(state: ControllerState, a: JobArray): number {
  let n = 0;
  for (const i of a.indices) if (state.jobs.has(elementId(a.id, i))) n++;
  return n;
}

function checkJobs(state: ControllerState, out: string[]): void {
  let prevId = 0;
  let prevOwner = 0;
  for (const a of state.arrays.values())
    if (!state.jobs.has(elementId(a.id, a.indices[0] ?? 0)) && elementsLeft(state, a) === 0)
      out.push(`job array ${a.id} has no element left but is still in the state`);
  for (const [key, job] of state.jobs) {
    const at = `job ${key}`;
    if (job.id !== key) out.push(`${at} is stored under the wrong key: its id is ${job.id}`);
    if (!Number.isSafeInteger(job.id) || job.id < 1) out.push(`${at}: id is not a whole number ≥ 1`);
    // An array element sits under its array's id (model/job-id.ts), its elements in index order.
    const owner = isElementId(job.id) ? arrayIdOf(job.id) : job.id;
    if (owner >= state.nextJobId) out.push(`${at}: id not below nextJobId ${state.nextJobId}`);
    if (isElementId(job.id) ? job.id <= prevId || owner < prevOwner : owner <= prevOwner)
      out.push(`${at}: out of id order (after job ${formatJobId(prevId)})`);
    if (isElementId(job.id)) {
      const a = state.arrays.get(owner);
      if (a === undefined) out.push(`${at}: an element of job array ${owner}, which is not in the state`);
      else if (job.spec !== a.spec || job.user !== a.user || job.dependency !== a.dependency)
        out.push(`${at}: does not share its array's values`);
    }
    prevId = job.id;
    prevOwner = owner;
    if (!isCount(job.runNumber)) out.push(`${at}: runNumber ${job.runNumber} is not a whole number ≥ 0`);
    if (!isCount(job.requeueCount)) out.push(`${at}: requeueCount ${job.requeueCount} is not a whole number ≥ 0`);
    if (job.submitTimeMs > state.logTimeMs)
      out.push(`${at}: submitTimeMs ${job.submitTimeMs} after logTimeMs ${state.logTimeMs}`);
    if (job.dispatchTimeMs > state.logTimeMs)
      out.push(`${at}: dispatchTimeMs ${job.dispatchTimeMs} after logTimeMs ${state.logTimeMs}`);
    checkJobFields(job, at, out);
  }
}

/** The fields each state allows (apply.ts: applySubmit, applyDispatch, applyStatus, clearRun, kill). */
function checkJobFields(job: Job, at: string, out: string[]): void {
  const bad = (what: string): void => void out.push(`${at} (${job.state}): ${what}`);
  const noRun = (): void => {
    if (job.started) bad('started is set without a run');
    if (job.pid !== 0) bad(`pid ${job.pid} without a run`);
    if (job.dispatchTimeMs !== 0) bad(`dispatchTimeMs ${job.dispatchTimeMs} without a run`);
    if (job.startTimeMs !== 0) bad(`startTimeMs ${job.startTimeMs} without a run`);
  };
  const notStartedYet = (): void => {
    if (!job.started && job.pid !== 0) bad(`pid ${job.pid} but not started`);
    if (!job.started && job.startTimeMs !== 0) bad(`startTimeMs ${job.startTimeMs} but not started`);
  };
  const dispatched = (what: string): void => {
    if (job.record === null) bad('has no dispatch record');
    if (job.runNumber < 1) bad(`runNumber ${job.runNumber}: a ${what} job has had a run`);
  };
  const notEnded = (): void => {
    if (job.endTimeMs !== 0) bad(`endTimeMs ${job.endTimeMs} but not ended`);
    if (job.exitCode !== 0) bad(`exitCode ${job.exitCode} but not ended`);
    if (job.signal !== null) bad(`signal ${job.signal} but not ended`);
    if (job.reason !== null) bad(`reason "${job.reason}" but not ended`);
  };
  if (job.heldBy !== null && job.state !== 'PEND') bad(`held by ${job.heldBy} but not pending`);
  if (job.events.length > JOB_EVENTS_MAX) bad(`${job.events.length} events, above JOB_EVENTS_MAX ${JOB_EVENTS_MAX}`);
  switch (job.state) {
    case 'PEND':
      if (job.record !== null) bad('holds a dispatch record');
      if (job.killRequestedBy !== null) bad(`kill requested by ${job.killRequestedBy}`);
      noRun();
      notEnded();
      return;
    case 'RUN':
    case 'SUSP':
      dispatched('running');
      if (job.lastDecline !== null) bad(`lastDecline "${job.lastDecline}" kept past the dispatch`);
      notStartedYet();
      notEnded();
      return;
    case 'DONE':
      dispatched('done');
      if (job.exitCode !== 0) bad(`exitCode ${job.exitCode}`);
      if (job.signal !== null) bad(`signal ${job.signal}`);
      if (job.killRequestedBy !== null) bad(`kill requested by ${job.killRequestedBy}`);
      if (job.lastDecline !== null) bad(`lastDecline "${job.lastDecline}"`);
      notStartedYet();
      return;
    case 'EXIT':
      if (job.lastDecline !== null) bad(`lastDecline "${job.lastDecline}"`);
      if (job.record === null) {
        // Killed while pending: it never ran since its last (re)queue.
        if (job.reason === null) bad('killed while pending without a reason');
        if (job.killRequestedBy !== null) bad(`kill requested by ${job.killRequestedBy} while pending`);
        if (job.exitCode !== 0 || job.signal !== null)
          bad(`exitCode ${job.exitCode} / signal ${job.signal} without a run`);
        noRun();
      } else {
        if (job.runNumber < 1) bad(`runNumber ${job.runNumber} with a dispatch record`);
        notStartedYet();
      }
      return;
    default:
      bad('unknown state');
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
function checkUsage(state: ControllerState, out: string[]): void {
  const fresh = emptyUsage();
  rebuildUsage(fresh, state.config?.cluster ?? null, state.jobs.values());
  const u: Usage = state.usage;
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
