// Applying a DispatchFact: the job still pending on the run before, the dispatch record still that
// of the job's profile as it is now (or, for a job from before profiles, made here), the placement
// the record's and within free resources; then the job RUN and its resources held.

import type { ClusterConfig } from '../model/config-types.js';
import { profileNotDefinedReason, resolveProfile } from '../model/profiles.js';
import { clearRun } from './apply-shared.js';
import { EMPTY_EFFECTIVE_RESREQ, type DispatchRecord, placementTasks } from './dispatch-record.js';
import type { ApplyResult, DispatchFact } from './facts.js';
import { hashOf, heldReason, liveMerge } from './jobs.js';
import { editJob, type ControllerState, type Job } from './state.js';
import { account, placementProblem } from './usage.js';
import { closedHostReason } from './apply-host-control.js';

function decline(
  state: ControllerState,
  job: Job | undefined,
  jobId: number,
  code: 'profile_not_defined' | 'profile_changed' | 'resources' | 'stale' | 'no_config',
  message: string,
): ApplyResult {
  if (job !== undefined && job.state === 'PEND') editJob(state, job).lastDecline = message;
  return { kind: 'declined', jobId, code, message };
}

function sameHosts(a: DispatchRecord['hosts'], b: DispatchRecord['hosts']): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i]!.host !== b[i]!.host || a[i]!.tasks !== b[i]!.tasks) return false;
  return true;
}

export function applyDispatch(state: ControllerState, b: DispatchFact, timeMs: number): ApplyResult {
  const job = state.jobs.get(b.jobId);
  if (job === undefined) return decline(state, undefined, b.jobId, 'stale', `job ${b.jobId} does not exist`);
  if (job.state !== 'PEND') return decline(state, job, b.jobId, 'stale', `job ${b.jobId} is ${job.state}, not pending`);
  // Held after the scheduler chose it: not dispatched (its pend reason stays the hold's).
  if (job.heldBy !== null) return { kind: 'declined', jobId: b.jobId, code: 'stale', message: heldReason(job.heldBy) };
  if (b.runNumber !== job.runNumber + 1) {
    return decline(
      state,
      job,
      b.jobId,
      'stale',
      `dispatch of run ${b.runNumber} but job ${b.jobId} has had ${job.runNumber} runs`,
    );
  }
  const config = state.config?.cluster ?? null;
  if (config === null) return decline(state, job, b.jobId, 'no_config', 'the cluster has no configuration yet');

  const record = checkedRecord(state, config, job, b);
  if (isDeclined(record)) return record;
  if (!sameHosts(record.hosts, b.placement))
    return decline(
      state,
      job,
      b.jobId,
      'stale',
      `the dispatch record's hosts differ from the placement of job ${b.jobId}`,
    );
  if (placementTasks(b.placement) !== record.tasks) {
    return decline(
      state,
      job,
      b.jobId,
      'stale',
      `the placement of job ${b.jobId} has ${placementTasks(b.placement)} tasks, its record ${record.tasks}`,
    );
  }
  // A dispatch proposed before its host was closed (xceadmin hosts close) is declined: no new job there.
  const closed = b.placement.find((h) => state.closedHosts.has(h.host));
  if (closed !== undefined) {
    const c = state.closedHosts.get(closed.host)!;
    return decline(state, job, b.jobId, 'resources', closedHostReason(c.host, c.reason, c.user));
  }
  const problem = placementProblem(state.usage, config, b.placement, record, state.hosts);
  if (problem !== null) return decline(state, job, b.jobId, 'resources', problem);

  const run = editJob(state, job);
  clearRun(run);
  run.state = 'RUN';
  run.runNumber = b.runNumber;
  run.record = record;
  run.dispatchTimeMs = timeMs;
  account(state.usage, config, record, 1);
  return { kind: 'dispatched', jobId: job.id, runNumber: job.runNumber };
}

const isDeclined = (r: DispatchRecord | ApplyResult): r is ApplyResult => 'kind' in r;

/**
 * The record the job runs with: the fact's, when it is still that of the job's profile as the
 * configuration now has it (else the decline); for a job recorded before profiles, the fact's or,
 * when it carries none, one made here.
 */
function checkedRecord(
  state: ControllerState,
  config: ClusterConfig,
  job: Job,
  b: DispatchFact,
): DispatchRecord | ApplyResult {
  // A job recorded before profiles: no profile, mode direct, its own values.
  if (job.profile === null) return b.record ?? legacyRecord(state, job, b);
  const resolved = resolveProfile(config, job.profile);
  if (resolved === null)
    return decline(state, job, b.jobId, 'profile_not_defined', profileNotDefinedReason(job.profile));
  const current = hashOf(resolved.profile);
  // A scheduler that sends no hash (rolling upgrade) skips the check.
  if (b.schedulerHash !== null && b.schedulerHash !== current) {
    return decline(
      state,
      job,
      b.jobId,
      'profile_changed',
      `application profile ${resolved.profile.name} changed since the scheduler's decision`,
    );
  }
  if (b.record === null) {
    return decline(state, job, b.jobId, 'stale', `dispatch of job ${b.jobId} carries no dispatch record`);
  }
  if (b.record.profile !== resolved.profile.name) {
    return decline(
      state,
      job,
      b.jobId,
      'stale',
      `the dispatch record of job ${b.jobId} is for profile ${b.record.profile ?? '(none)'}, not ${resolved.profile.name}`,
    );
  }
  if (b.schedulerHash !== null && b.record.profileHash !== current) {
    return decline(
      state,
      job,
      b.jobId,
      'profile_changed',
      `application profile ${resolved.profile.name} changed since the scheduler's decision`,
    );
  }
  return b.record;
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
