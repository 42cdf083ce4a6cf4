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
import { addJobEvent, isRunning, type ControllerState, type Job } from './state.js';

function backToPending(state: ControllerState, job: Job): void {
  if (isRunning(job)) release(state, job);
  // The scheduler reads a pending job's spec on every pass: decode one held lazily, once.
  job.spec = decodedSpec(job.spec);
  job.state = 'PEND';
  job.requeueCount++;
  clearRun(job);
}

export function applyControl(state: ControllerState, b: JobControlFact, timeMs: number): ApplyResult {
  const job = state.jobs.get(b.jobId);
  if (job === undefined) return reject('job_not_found', `job ${b.jobId} does not exist`);
  const config = state.config?.cluster ?? null;
  // RBAC, re-checked here (the API checked before proposing): the owner controls their own jobs;
  // anyone else needs job:control. Restart also needs app:use on the job's (resolved) profile.
  if (config !== null && b.user !== job.user) {
    const ok = authorize(config, b.user, 'job:control');
    if (!ok.allowed) return reject('not_authorized', ok.reason);
  }
  const done: ApplyResult = { kind: 'controlled', jobId: job.id };
  const event = (detail: string | null = null): ApplyResult => {
    addJobEvent(job, { action: b.action, user: b.user, timeMs, detail });
    return done;
  };
  switch (b.action) {
    case 'kill':
      if (job.state === 'PEND') {
        job.state = 'EXIT';
        job.reason = `killed by ${b.user} while pending`;
        job.endTimeMs = timeMs;
        job.lastDecline = null;
        job.heldBy = null;
        return done;
      }
      if (isRunning(job)) {
        // The worker stops it and reports finished; the job ends then (its slots are still held).
        if (job.killRequestedBy === null) job.killRequestedBy = b.user;
        return done;
      }
      return reject('bad_state', `job ${job.id} has already finished (${job.state})`);
    case 'requeue':
      if (job.state === 'PEND') return reject('bad_state', `job ${job.id} is already pending`);
      backToPending(state, job);
      return done;
    case 'restart': {
      if (job.state === 'PEND' || isRunning(job))
        return reject('bad_state', `job ${job.id} is ${job.state}; only a finished job can be restarted (use requeue)`);
      if (config !== null) {
        const refused = restartRefused(config, b.user, job);
        if (refused !== null) return refused;
      }
      backToPending(state, job);
      return done;
    }
    case 'hold':
      if (job.state !== 'PEND')
        return reject('bad_state', `job ${job.id} is ${job.state}; only a pending job can be held`);
      if (job.heldBy !== null) return reject('bad_state', `job ${job.id} is already held by user ${job.heldBy}`);
      job.heldBy = b.user;
      return event();
    case 'release':
      if (job.state !== 'PEND' || job.heldBy === null)
        return reject('bad_state', `job ${job.id} is not held (${job.state}); only a held pending job can be released`);
      job.heldBy = null;
      return event();
    case 'suspend':
      if (job.state !== 'RUN')
        return reject('bad_state', `job ${job.id} is ${job.state}; only a running job can be suspended`);
      if (job.killRequestedBy !== null)
        return reject('bad_state', `job ${job.id} is being killed (by ${job.killRequestedBy}); it cannot be suspended`);
      job.state = 'SUSP';
      return event();
    case 'resume':
      if (job.state !== 'SUSP')
        return reject('bad_state', `job ${job.id} is ${job.state}; only a suspended job can be resumed`);
      job.state = 'RUN';
      return event();
  }
}

/** A restart runs the job again as `user`'s: queue:submit on its queue, app:use on its (resolved) profile. */
function restartRefused(config: ClusterConfig, user: string, job: Job): ApplyResult | null {
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
