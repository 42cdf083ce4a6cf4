// What the applies of the fact kinds share (apply-*.ts): a refusal, and the two steps a run ends
// with, releasing its resources and forgetting it.

import type { ApplyResult, RejectCode } from './facts.js';
import type { ControllerState, Job, JobDraft } from './state.js';
import { account } from './usage.js';

export const reject = (code: RejectCode, message: string): ApplyResult => ({ kind: 'rejected', code, message });

/** Gives back what the job's current run holds (usage.ts). */
export function release(state: ControllerState, job: Job): void {
  if (job.record !== null) account(state.usage, state.config?.cluster ?? null, job.record, -1);
}

/** Forgets everything about the job's last run (before a new dispatch, or back to PEND). */
export function clearRun(job: JobDraft): void {
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
