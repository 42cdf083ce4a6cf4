// Applying a JobControlFact: kill, requeue, restart, hold, release, suspend, resume, RBAC
// re-checked (the owner controls their own jobs; anyone else needs job:control; a restart also
// needs queue:submit and app:use).
//
// Hold and release act on a pending job (the scheduler skips a held one: its pend reason is
// "held by user U"); suspend and resume on a dispatched one: the state turns SUSP or RUN here, at
// the fact, and the leader's dispatcher tells the head host's worker, which stops (SIGSTOP) or
// continues (SIGCONT) the job's process group and reports it back (a `suspended` / `resumed`
// JobStatusFact, an event of the job). A suspended job keeps its hosts and slots.

import { resolveProfile } from '../model/profiles.js';
import { authorize } from '../model/rbac.js';
import type { ClusterConfig } from '../model/config-types.js';
import { clearRun, reject, release } from './apply-shared.js';
import type { ApplyResult, JobControlFact } from './facts.js';
import { decodedSpec } from './lazy-parts.js';
import { addJobEvent, editJob, isRunning, type ControllerState, type Job, type JobArray } from './state.js';
import { elementsOf } from './arrays.js';
import { noteFinished, noteUnfinished } from './finished-index.js';
import { DependencyEvaluator, neverReason } from './dependency.js';
import { formatJobId } from '../model/job-id.js';

function backToPending(state: ControllerState, job: Job): void {
  if (isRunning(job)) release(state, job);
  const draft = editJob(state, job);
  // The scheduler reads a pending job's spec on every pass: decode one held lazily, once.
  draft.spec = decodedSpec(job.spec);
  draft.state = 'PEND';
  draft.requeueCount++;
  clearRun(draft);
  noteUnfinished(state, job);
}

export function applyControl(state: ControllerState, b: JobControlFact, timeMs: number): ApplyResult {
  const job = state.jobs.get(b.jobId);
  if (job === undefined) {
    const array = state.arrays.get(b.jobId);
    if (array !== undefined) return controlArray(state, array, b, timeMs);
    return reject('job_not_found', `job ${formatJobId(b.jobId)} does not exist`);
  }
  if (b.action === 'dependencyNever') return killDependencyNever(state, job, timeMs, new DependencyEvaluator(state));
  const config = state.config?.cluster ?? null;
  // RBAC, re-checked here (the API checked before proposing): the owner controls their own jobs;
  // anyone else needs job:control. Restart also needs app:use on the job's (resolved) profile.
  if (config !== null && b.user !== job.user) {
    const ok = authorize(config, b.user, 'job:control');
    if (!ok.allowed) return reject('not_authorized', ok.reason);
  }
  const done: ApplyResult = { kind: 'controlled', jobId: job.id };
  const event = (detail: string | null = null): ApplyResult => {
    addJobEvent(editJob(state, job), { action: b.action, user: b.user, timeMs, detail });
    return done;
  };
  switch (b.action) {
    case 'kill':
      if (job.state === 'PEND') {
        const draft = editJob(state, job);
        draft.state = 'EXIT';
        draft.reason = `killed by ${b.user} while pending`;
        draft.endTimeMs = timeMs;
        draft.lastDecline = null;
        draft.heldBy = null;
        noteFinished(state, job);
        return done;
      }
      if (isRunning(job)) {
        // The worker stops it and reports finished; the job ends then (its slots are still held).
        if (job.killRequestedBy === null) editJob(state, job).killRequestedBy = b.user;
        return done;
      }
      return reject('bad_state', `job ${formatJobId(job.id)} has already finished (${job.state})`);
    case 'requeue':
      if (job.state === 'PEND') return reject('bad_state', `job ${formatJobId(job.id)} is already pending`);
      backToPending(state, job);
      return done;
    case 'restart': {
      if (job.state === 'PEND' || isRunning(job))
        return reject(
          'bad_state',
          `job ${formatJobId(job.id)} is ${job.state}; only a finished job can be restarted (use requeue)`,
        );
      if (config !== null) {
        const refused = restartRefused(config, b.user, job);
        if (refused !== null) return refused;
      }
      backToPending(state, job);
      return done;
    }
    case 'hold':
    case 'release':
    case 'suspend':
    case 'resume':
      return holdOrSuspend(state, job, b.action, b.user, event);
  }
}

/** Hold and release a pending job; suspend and resume a dispatched one. `event` records it in the job. */
function holdOrSuspend(
  state: ControllerState,
  job: Job,
  action: 'hold' | 'release' | 'suspend' | 'resume',
  user: string,
  event: () => ApplyResult,
): ApplyResult {
  switch (action) {
    case 'hold':
      if (job.state !== 'PEND')
        return reject('bad_state', `job ${formatJobId(job.id)} is ${job.state}; only a pending job can be held`);
      if (job.heldBy !== null)
        return reject('bad_state', `job ${formatJobId(job.id)} is already held by user ${job.heldBy}`);
      editJob(state, job).heldBy = user;
      return event();
    case 'release':
      if (job.state !== 'PEND' || job.heldBy === null)
        return reject(
          'bad_state',
          `job ${formatJobId(job.id)} is not held (${job.state}); only a held pending job can be released`,
        );
      editJob(state, job).heldBy = null;
      return event();
    case 'suspend':
      if (job.state !== 'RUN')
        return reject('bad_state', `job ${formatJobId(job.id)} is ${job.state}; only a running job can be suspended`);
      if (job.killRequestedBy !== null)
        return reject(
          'bad_state',
          `job ${formatJobId(job.id)} is being killed (by ${job.killRequestedBy}); it cannot be suspended`,
        );
      editJob(state, job).state = 'SUSP';
      return event();
    case 'resume':
      if (job.state !== 'SUSP')
        return reject('bad_state', `job ${formatJobId(job.id)} is ${job.state}; only a suspended job can be resumed`);
      editJob(state, job).state = 'RUN';
      return event();
  }
}

/**
 * A control of a whole array: each element the action applies to (kill: pending and running ones;
 * requeue: running and finished ones; restart: finished ones), the others left as they are. RBAC
 * as for one job, once. Refused when it applies to no element.
 */
function controlArray(state: ControllerState, array: JobArray, b: JobControlFact, timeMs: number): ApplyResult {
  const config = state.config?.cluster ?? null;
  if (b.action !== 'dependencyNever' && config !== null) {
    if (b.user !== array.user) {
      const ok = authorize(config, b.user, 'job:control');
      if (!ok.allowed) return reject('not_authorized', ok.reason);
    }
    if (b.action === 'restart') {
      const refused = restartRefused(config, b.user, array);
      if (refused !== null) return refused;
    }
  }
  const elements = elementsOf(state, array);
  const evaluator = new DependencyEvaluator(state);
  let n = 0;
  for (const job of elements) {
    const one: JobControlFact = { ...b, jobId: job.id };
    const r =
      b.action === 'dependencyNever'
        ? killDependencyNever(state, job, timeMs, evaluator)
        : applyControl(state, one, timeMs);
    if (r.kind === 'controlled') n++;
  }
  if (n === 0) {
    const what = {
      kill: 'pending or running',
      requeue: 'running or finished',
      restart: 'finished',
      hold: 'pending',
      release: 'held pending',
      suspend: 'running',
      resume: 'suspended',
      dependencyNever: 'pending',
    };
    return reject('bad_state', `job array ${array.id} has no ${what[b.action]} element`);
  }
  return { kind: 'controlled', jobId: array.id };
}

/**
 * The leader's `dependencyNever`: a pending job under `--dep-never kill` whose dependency can never
 * be met ends EXIT, saying why. Checked again here (the state may have moved since the pass).
 */
function killDependencyNever(state: ControllerState, job: Job, timeMs: number, ev: DependencyEvaluator): ApplyResult {
  const dep = job.dependency;
  if (job.state !== 'PEND' || dep === null || !dep.killWhenNever)
    return reject('bad_state', `job ${formatJobId(job.id)} is not pending on a dependency with --dep-never kill`);
  const v = ev.value(dep);
  if (v.met || !v.final) return reject('bad_state', `job ${formatJobId(job.id)}'s dependency may still be satisfied`);
  const draft = editJob(state, job);
  draft.state = 'EXIT';
  draft.reason = `killed (--dep-never kill): ${neverReason(v)}`;
  draft.endTimeMs = timeMs;
  draft.lastDecline = null;
  draft.heldBy = null;
  noteFinished(state, job);
  return { kind: 'controlled', jobId: job.id };
}

/** A restart runs the job again as `user`'s: queue:submit on its queue, app:use on its (resolved) profile. */
function restartRefused(config: ClusterConfig, user: string, job: Pick<Job, 'queue' | 'profile'>): ApplyResult | null {
  const q = authorize(config, user, 'queue:submit', { type: 'queue', value: job.queue });
  if (!q.allowed) return reject('not_authorized', q.reason);
  if (job.profile !== null) {
    const resolved = resolveProfile(config, job.profile);
    const name = resolved === null ? job.profile : resolved.profile.name;
    const a = authorize(config, user, 'app:use', { type: 'app', value: name });
    if (!a.allowed) return reject('not_authorized', a.reason);
  }
  return null;
}
