// apply(state, fact, index) → result: the one way the controller state changes. Deterministic: a
// function of the state and the fact only (times are the leader's, inside the fact; no clock, no
// randomness, no I/O), so every controller that applies the same log holds the same state. It
// updates `state` in place (1 M jobs cannot be copied per fact) and returns the result for the
// client. Job ids are assigned here, in log order.
//
// Exactly once: a fact with a client id is checked against the session table first; a retried
// (client, sequence) returns the first result and changes nothing.

import { admitSubmit } from './admission.js';
import { WireError } from '../wire/capnp-wire.js';
import { loadConfig } from '../model/config.js';
import type { ClusterConfig } from '../model/config-types.js';
import { EMPTY_EFFECTIVE_RESREQ, type DispatchRecord, placementTasks } from './dispatch-record.js';
import { decodeFact } from './facts-codec.js';
import type {
  ApplyResult,
  ConfigFact,
  DispatchFact,
  Fact,
  JobControlFact,
  JobStatusFact,
  NameCount,
  RejectCode,
  SubmitFact,
} from './facts.js';
import { hashOf, liveMerge } from './jobs.js';
import { decodedSpec } from './lazy-parts.js';
import { profileNotDefinedReason, resolveProfile } from '../model/profiles.js';
import { authorize } from '../model/rbac.js';
import { checkSession, expireSessions, recordSession } from './sessions.js';
import { JOBS_MAX, type ControllerState, type Job } from './state.js';
import { account, placementProblem, rebuildUsage } from './usage.js';

/** apply was called out of log order: a bug in the caller, never a user error. */
export class ApplyOrderError extends Error {
  override readonly name = 'ApplyOrderError';
}

const reject = (code: RejectCode, message: string): ApplyResult => ({ kind: 'rejected', code, message });

/**
 * Applies one committed log entry. `fact` is the entry's bytes (decoded here, once) or an already
 * decoded fact; empty bytes are the leader's no-op entry. `index` must grow.
 */
export function apply(state: ControllerState, fact: Uint8Array | Fact, index: number): ApplyResult {
  if (!(index > state.appliedIndex)) throw new ApplyOrderError(`apply of index ${index} after ${state.appliedIndex}`);
  let f: Fact;
  if (fact instanceof Uint8Array) {
    if (fact.length === 0) {
      state.appliedIndex = index;
      return { kind: 'noop' };
    }
    try {
      f = decodeFact(fact);
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      state.appliedIndex = index;
      return reject('decode_error', `log entry ${index} is not a valid fact: ${e.message}`);
    }
  } else f = fact;

  if (f.timeMs > state.logTimeMs) state.logTimeMs = f.timeMs;
  expireSessions(state.sessions, state.logTimeMs);
  state.appliedIndex = index;

  const client = f.clientId;
  // A session belongs to the user who first used it: another user's fact naming it is refused
  // (sessions.ts) and leaves it as it was.
  const user = client === null ? null : factUser(f);
  if (client !== null) {
    const seen = checkSession(state.sessions, client, f.sequence, user);
    if (seen.kind !== 'new') return seen.result;
  }
  const result = applyBody(state, f);
  if (client !== null) recordSession(state.sessions, client, f.sequence, state.logTimeMs, result, user);
  return result;
}

/** The user a fact acts for (a session's owner is the first one): null for the leader's own facts. */
export function factUser(f: Fact): string | null {
  const b = f.body;
  return b.kind === 'submit' || b.kind === 'control' || b.kind === 'config' ? b.user : null;
}

function applyBody(state: ControllerState, f: Fact): ApplyResult {
  const b = f.body;
  switch (b.kind) {
    case 'noop':
      return { kind: 'noop' };
    case 'config':
      return applyConfig(state, b);
    case 'submit':
      return applySubmit(state, b, f.timeMs);
    case 'dispatch':
      return applyDispatch(state, b, f.timeMs);
    case 'status':
      return applyStatus(state, b, f.timeMs);
    case 'control':
      return applyControl(state, b, f.timeMs);
  }
}

// ---- config ----

function applyConfig(state: ControllerState, b: ConfigFact): ApplyResult {
  const current = state.config?.cluster ?? null;
  if (current !== null && b.user !== null) {
    const ok = authorize(current, b.user, 'cluster:admin');
    if (!ok.allowed) return reject('not_authorized', ok.reason);
  }
  const loaded = loadConfig(b.files);
  if (!loaded.ok) {
    const dangling = loaded.errors.find((e) => e.field === 'default_application');
    const text = loaded.errors
      .slice(0, 10)
      .map(
        (e) =>
          `${e.file}${e.entry !== undefined ? ` ${e.entry}` : ''}${e.field !== undefined ? ` ${e.field}` : ''}: ${e.message}`,
      )
      .join('; ');
    const more = loaded.errors.length > 10 ? ` (and ${loaded.errors.length - 10} more)` : '';
    return dangling !== undefined
      ? reject('default_dangling', `configuration refused, the current one stays in force: ${text}${more}`)
      : reject('config_invalid', `configuration refused, the current one stays in force: ${text}${more}`);
  }
  const next = loaded.config;
  // loadConfig refuses a dangling default; this is the controller's own re-check (brief, "Default profile").
  const def = next.cluster.defaultApplication;
  if (!next.profiles.has(def)) {
    return reject(
      'default_dangling',
      `configuration refused, the current one stays in force: default_application ${def} names no application profile`,
    );
  }
  const inUse = removedInUse(state, current, next);
  state.config = { files: b.files.map((x) => ({ path: x.path, text: x.text })), cluster: next };
  rebuildUsage(state.usage, next, state.jobs.values());
  return {
    kind: 'configApplied',
    inUse,
    warnings: loaded.warnings.map(
      (w) =>
        `${w.file}${w.entry !== undefined ? ` ${w.entry}` : ''}${w.field !== undefined ? ` ${w.field}` : ''}: ${w.message}`,
    ),
  };
}

/** Profiles and aliases the new configuration removes that pending jobs still name, with counts. */
function removedInUse(state: ControllerState, current: ClusterConfig | null, next: ClusterConfig): NameCount[] {
  const counts = new Map<string, number>();
  for (const j of state.jobs.values()) {
    if (j.state !== 'PEND' || j.profile === null) continue;
    counts.set(j.profile, (counts.get(j.profile) ?? 0) + 1);
  }
  const out: NameCount[] = [];
  for (const [name, n] of counts) {
    const before = current === null ? null : resolveProfile(current, name);
    if (before === null) continue; // not removed by this configuration: it was already missing
    if (resolveProfile(next, name) !== null) continue;
    out.push({ name, isAlias: before.profile.name !== name, pendingJobs: n });
  }
  out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return out;
}

// ---- submit ----

function applySubmit(state: ControllerState, b: SubmitFact, timeMs: number): ApplyResult {
  const config = state.config?.cluster ?? null;
  if (config === null)
    return reject(
      'no_config',
      'the cluster has no configuration yet; an administrator must run `xceadmin config upgrade`',
    );
  if (state.jobs.size >= JOBS_MAX)
    return reject(
      'too_many_jobs',
      `the controller holds ${JOBS_MAX} jobs, its limit; try again when finished jobs have been cleaned`,
    );
  // The same admission as the leader's early check (admission.ts), here authoritatively: a
  // profile removed since then is refused, never replaced by a fallback.
  const admitted = admitSubmit(config, b.user, b);
  if (!admitted.ok) return reject(admitted.code, admitted.message);
  const recorded = admitted.submit.profile;

  const id = state.nextJobId++;
  const job: Job = {
    id,
    state: 'PEND',
    user: b.user,
    queue: b.queue,
    profile: recorded,
    profileRequested: b.profileRequested,
    spec: b.spec,
    submitTimeMs: timeMs,
    runNumber: 0,
    requeueCount: 0,
    record: null,
    dispatchTimeMs: 0,
    started: false,
    pid: 0,
    startTimeMs: 0,
    endTimeMs: 0,
    exitCode: 0,
    signal: null,
    reason: null,
    killRequestedBy: null,
    lastDecline: null,
  };
  state.jobs.set(id, job);
  return { kind: 'submitted', jobId: id };
}

// ---- dispatch ----

function decline(
  job: Job | undefined,
  jobId: number,
  code: 'profile_not_defined' | 'profile_changed' | 'resources' | 'stale' | 'no_config',
  message: string,
): ApplyResult {
  if (job !== undefined && job.state === 'PEND') job.lastDecline = message;
  return { kind: 'declined', jobId, code, message };
}

function sameHosts(a: DispatchRecord['hosts'], b: DispatchRecord['hosts']): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i]!.host !== b[i]!.host || a[i]!.tasks !== b[i]!.tasks) return false;
  return true;
}

function applyDispatch(state: ControllerState, b: DispatchFact, timeMs: number): ApplyResult {
  const job = state.jobs.get(b.jobId);
  if (job === undefined) return decline(undefined, b.jobId, 'stale', `job ${b.jobId} does not exist`);
  if (job.state !== 'PEND') return decline(job, b.jobId, 'stale', `job ${b.jobId} is ${job.state}, not pending`);
  if (b.runNumber !== job.runNumber + 1) {
    return decline(
      job,
      b.jobId,
      'stale',
      `dispatch of run ${b.runNumber} but job ${b.jobId} has had ${job.runNumber} runs`,
    );
  }
  const config = state.config?.cluster ?? null;
  if (config === null) return decline(job, b.jobId, 'no_config', 'the cluster has no configuration yet');

  let record: DispatchRecord;
  if (job.profile !== null) {
    const resolved = resolveProfile(config, job.profile);
    if (resolved === null) return decline(job, b.jobId, 'profile_not_defined', profileNotDefinedReason(job.profile));
    const current = hashOf(resolved.profile);
    // A scheduler that sends no hash (rolling upgrade) skips the check.
    if (b.schedulerHash !== null && b.schedulerHash !== current) {
      return decline(
        job,
        b.jobId,
        'profile_changed',
        `application profile ${resolved.profile.name} changed since the scheduler's decision`,
      );
    }
    if (b.record === null) {
      return decline(job, b.jobId, 'stale', `dispatch of job ${b.jobId} carries no dispatch record`);
    }
    if (b.record.profile !== resolved.profile.name) {
      return decline(
        job,
        b.jobId,
        'stale',
        `the dispatch record of job ${b.jobId} is for profile ${b.record.profile ?? '(none)'}, not ${resolved.profile.name}`,
      );
    }
    if (b.schedulerHash !== null && b.record.profileHash !== current) {
      return decline(
        job,
        b.jobId,
        'profile_changed',
        `application profile ${resolved.profile.name} changed since the scheduler's decision`,
      );
    }
    record = b.record;
  } else {
    // A job recorded before profiles: no profile, mode direct, its own values.
    record = b.record ?? legacyRecord(state, job, b);
  }
  if (!sameHosts(record.hosts, b.placement))
    return decline(job, b.jobId, 'stale', `the dispatch record's hosts differ from the placement of job ${b.jobId}`);
  if (placementTasks(b.placement) !== record.tasks) {
    return decline(
      job,
      b.jobId,
      'stale',
      `the placement of job ${b.jobId} has ${placementTasks(b.placement)} tasks, its record ${record.tasks}`,
    );
  }
  const problem = placementProblem(state.usage, config, b.placement, record);
  if (problem !== null) return decline(job, b.jobId, 'resources', problem);

  clearRun(job);
  job.state = 'RUN';
  job.runNumber = b.runNumber;
  job.record = record;
  job.dispatchTimeMs = timeMs;
  account(state.usage, config, record, 1);
  return { kind: 'dispatched', jobId: job.id, runNumber: job.runNumber };
}

/** The record of an old (pre-profile) dispatch fact, which carried none. */
function legacyRecord(state: ControllerState, job: Job, b: DispatchFact): DispatchRecord {
  const m = liveMerge(state.config?.cluster ?? null, null, job.spec);
  const e = m.ok ? m.effective : null;
  return {
    profile: null,
    profileHash: null,
    mode: 'direct',
    launchType: e?.launchType ?? 'serial',
    resreq: e?.resreq ?? EMPTY_EFFECTIVE_RESREQ,
    tasks: placementTasks(b.placement),
    hosts: b.placement,
    env: e?.env ?? [],
    limits: e?.limits ?? {},
    profilePreExec: null,
    profilePostExec: null,
    jobPreExec: job.spec.preExec,
    jobPostExec: job.spec.postExec,
  };
}

// ---- status ----

function release(state: ControllerState, job: Job): void {
  if (job.record !== null) account(state.usage, state.config?.cluster ?? null, job.record, -1);
}

function applyStatus(state: ControllerState, b: JobStatusFact, timeMs: number): ApplyResult {
  const job = state.jobs.get(b.jobId);
  const ignored = (message: string): ApplyResult => ({ kind: 'ignored', jobId: b.jobId, message });
  if (job === undefined) return ignored(`job ${b.jobId} does not exist`);
  if (b.runNumber !== job.runNumber)
    return ignored(`report on run ${b.runNumber} of job ${b.jobId}, which is on run ${job.runNumber}`);
  // A status re-sent (worker retry, leader change) finds the job already past it: applied once.
  if (job.state !== 'RUN') return ignored(`job ${b.jobId} is ${job.state}: report already applied or too late`);
  const s = b.status;
  switch (s.type) {
    case 'started':
      if (job.started) return ignored(`job ${b.jobId} run ${b.runNumber} already started`);
      job.started = true;
      job.pid = s.pid;
      job.startTimeMs = s.timeMs !== 0 ? s.timeMs : timeMs;
      return { kind: 'statusApplied', jobId: job.id };
    case 'finished': {
      const killed = job.killRequestedBy;
      job.state = s.exitCode === 0 && s.signal === null && killed === null ? 'DONE' : 'EXIT';
      job.exitCode = s.exitCode;
      job.signal = s.signal;
      job.reason = s.reason ?? (killed !== null ? `killed by ${killed}` : null);
      job.endTimeMs = s.timeMs !== 0 ? s.timeMs : timeMs;
      release(state, job);
      return { kind: 'statusApplied', jobId: job.id };
    }
    case 'launchError':
      job.state = 'EXIT';
      job.reason = `launch failed: ${s.reason}`;
      job.endTimeMs = timeMs;
      release(state, job);
      return { kind: 'statusApplied', jobId: job.id };
  }
}

// ---- control ----

/** Forgets everything about the job's last run (before a new dispatch, or back to PEND). */
function clearRun(job: Job): void {
  job.record = null;
  job.started = false;
  job.pid = 0;
  job.dispatchTimeMs = 0;
  job.startTimeMs = 0;
  job.endTimeMs = 0;
  job.exitCode = 0;
  job.signal = null;
  job.reason = null;
  job.killRequestedBy = null;
  job.lastDecline = null;
}

function backToPending(state: ControllerState, job: Job): void {
  if (job.state === 'RUN') release(state, job);
  // The scheduler reads a pending job's spec on every pass: decode one held lazily, once.
  job.spec = decodedSpec(job.spec);
  job.state = 'PEND';
  job.requeueCount++;
  clearRun(job);
}

function applyControl(state: ControllerState, b: JobControlFact, timeMs: number): ApplyResult {
  const job = state.jobs.get(b.jobId);
  if (job === undefined) return reject('job_not_found', `job ${b.jobId} does not exist`);
  const config = state.config?.cluster ?? null;
  // RBAC, re-checked here (the API checked before proposing): the owner controls their own jobs;
  // anyone else needs job:control. Restart also needs app:use on the job's (resolved) profile.
  if (config !== null && b.user !== job.user) {
    const ok = authorize(config, b.user, 'job:control');
    if (!ok.allowed) return reject('not_authorized', ok.reason);
  }
  switch (b.action) {
    case 'kill':
      if (job.state === 'PEND') {
        job.state = 'EXIT';
        job.reason = `killed by ${b.user} while pending`;
        job.endTimeMs = timeMs;
        job.lastDecline = null;
        return { kind: 'controlled', jobId: job.id };
      }
      if (job.state === 'RUN') {
        // The worker stops it and reports finished; the job ends then (its slots are still held).
        if (job.killRequestedBy === null) job.killRequestedBy = b.user;
        return { kind: 'controlled', jobId: job.id };
      }
      return reject('bad_state', `job ${job.id} has already finished (${job.state})`);
    case 'requeue':
      if (job.state === 'PEND') return reject('bad_state', `job ${job.id} is already pending`);
      backToPending(state, job);
      return { kind: 'controlled', jobId: job.id };
    case 'restart': {
      if (job.state === 'PEND' || job.state === 'RUN')
        return reject('bad_state', `job ${job.id} is ${job.state}; only a finished job can be restarted (use requeue)`);
      if (config !== null) {
        const q = authorize(config, b.user, 'queue:submit', { type: 'queue', value: job.queue });
        if (!q.allowed) return reject('not_authorized', q.reason);
        if (job.profile !== null) {
          const resolved = resolveProfile(config, job.profile);
          const name = resolved === null ? job.profile : resolved.profile.name;
          const a = authorize(config, b.user, 'app:use', { type: 'app', value: name });
          if (!a.allowed) return reject('not_authorized', a.reason);
        }
      }
      backToPending(state, job);
      return { kind: 'controlled', jobId: job.id };
    }
  }
}
