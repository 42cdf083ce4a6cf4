// Applying a JobStatusFact from a job's head host: started, finished (DONE or EXIT, its resources
// released), a launch error, or the worker's report that it suspended or resumed the job. A report on another run, or one already applied, is ignored.

import { release } from './apply-shared.js';
import type { ApplyResult, JobStatusFact } from './facts.js';
import { addJobEvent, editJob, isRunning, type ControllerState } from './state.js';
import { noteFinished } from './finished-index.js';

export function applyStatus(state: ControllerState, b: JobStatusFact, timeMs: number): ApplyResult {
  const job = state.jobs.get(b.jobId);
  const ignored = (message: string): ApplyResult => ({ kind: 'ignored', jobId: b.jobId, message });
  if (job === undefined) return ignored(`job ${b.jobId} does not exist`);
  if (b.runNumber !== job.runNumber)
    return ignored(`report on run ${b.runNumber} of job ${b.jobId}, which is on run ${job.runNumber}`);
  // A status re-sent (worker retry, leader change) finds the job already past it: applied once.
  if (!isRunning(job)) return ignored(`job ${b.jobId} is ${job.state}: report already applied or too late`);
  const s = b.status;
  switch (s.type) {
    case 'started': {
      if (job.started) return ignored(`job ${b.jobId} run ${b.runNumber} already started`);
      const run = editJob(state, job);
      run.started = true;
      run.pid = s.pid;
      run.startTimeMs = s.timeMs !== 0 ? s.timeMs : timeMs;
      return { kind: 'statusApplied', jobId: job.id };
    }
    case 'finished': {
      const killed = job.killRequestedBy;
      const run = editJob(state, job);
      run.state = s.exitCode === 0 && s.signal === null && killed === null ? 'DONE' : 'EXIT';
      run.exitCode = s.exitCode;
      run.signal = s.signal;
      run.reason = s.reason ?? (killed !== null ? `killed by ${killed}` : null);
      run.endTimeMs = s.timeMs !== 0 ? s.timeMs : timeMs;
      release(state, job);
      noteFinished(state, job);
      return { kind: 'statusApplied', jobId: job.id };
    }
    case 'launchError': {
      const run = editJob(state, job);
      run.state = 'EXIT';
      run.reason = `launch failed: ${s.reason}`;
      run.endTimeMs = timeMs;
      release(state, job);
      noteFinished(state, job);
      return { kind: 'statusApplied', jobId: job.id };
    }
    case 'suspended':
    case 'resumed': {
      // The worker's confirmation of a suspend or resume (the state changed at the control fact): an
      // event of the job. A re-sent report (same event, same worker time) is applied once.
      const at = s.timeMs !== 0 ? s.timeMs : timeMs;
      if (job.events.some((e) => e.user === null && e.action === s.type && e.timeMs === at))
        return ignored(`job ${b.jobId} run ${b.runNumber}: ${s.type} already reported`);
      const signal = s.type === 'suspended' ? 'SIGSTOP' : 'SIGCONT';
      addJobEvent(editJob(state, job), {
        action: s.type,
        user: null,
        timeMs: at,
        detail: `${signal} on host ${job.record?.hosts[0]?.host ?? '?'}`,
      });
      return { kind: 'statusApplied', jobId: job.id };
    }
  }
}
