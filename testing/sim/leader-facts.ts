// What the simulated leader and workers propose: the scheduler's dispatch decisions (right or
// wrong), the workers' reports on running jobs, and the retention loop's CleanFacts. Every choice is
// drawn from the run's seeded PRNG.

import type { SeededRandom } from '../../raft/prng.js';
import { buildDispatchRecord } from '../../statemachine/dispatch-record.js';
import type { FactBody, JobStatus } from '../../statemachine/facts.js';
import { liveMerge } from '../../statemachine/jobs.js';
import type { ControllerState, Job } from '../../statemachine/state.js';
import { formatJobId } from '../../model/job-id.js';
import type { SimConfig } from './sim-config.js';

/** A dispatch the simulated scheduler decides for `job` on the leader's view. */
export function dispatchFor(
  job: Job,
  state: ControllerState,
  rng: SeededRandom,
  config: SimConfig,
): { body: FactBody; label: string } | undefined {
  const cluster = state.config?.cluster ?? null;
  const m = liveMerge(cluster, job.profile, job.spec);
  if (!m.ok) return undefined;
  const hosts = config.hostNames();
  const tasks = m.effective.tasks;
  // Mostly on one host; sometimes split over two (a host appearing twice is declined by apply).
  let placement: { host: string; tasks: number }[];
  if (tasks > 1 && rng.chance(0.3)) {
    const a = rng.pick(hosts);
    const b = rng.pick(hosts);
    const first = Math.ceil(tasks / 2);
    placement = [
      { host: a, tasks: first },
      { host: b, tasks: tasks - first },
    ];
  } else placement = [{ host: rng.pick(hosts), tasks }];
  const record = buildDispatchRecord(m.effective, m.hash, placement);
  // Sometimes the scheduler's view is one run behind (a duplicate decision): declined as stale.
  const runNumber = job.runNumber + (rng.chance(0.05) ? 0 : 1);
  const hash = rng.chance(0.05) ? 'f'.repeat(64) : m.hash;
  return {
    label: `dispatch job ${formatJobId(job.id)} run ${runNumber} on ${placement.map((p) => `${p.host}:${p.tasks}`).join('+')}`,
    body: { kind: 'dispatch', jobId: job.id, runNumber, placement, record, schedulerHash: hash },
  };
}

/**
 * The suspend or resume a running (or suspended) job's worker has not confirmed yet: the worker
 * stops or continues the job's processes and reports it (a `suspended` / `resumed` status).
 */
function unconfirmed(job: Job): 'suspended' | 'resumed' | null {
  for (let i = job.events.length - 1; i >= 0; i--) {
    const a = job.events[i]!.action;
    if (a === 'suspend') return 'suspended';
    if (a === 'resume') return 'resumed';
    if (a === 'suspended' || a === 'resumed') return null;
  }
  return null;
}

/**
 * A worker's report on a running or suspended job: the confirmation of a suspend or resume, started,
 * then finished (or a launch error). A suspended job only finishes when it was killed.
 */
export function statusFor(job: Job, rng: SeededRandom, timeMs: number): { body: FactBody; label: string } {
  let status: JobStatus;
  const confirm = unconfirmed(job);
  if (confirm !== null && rng.chance(0.8)) status = { type: confirm, timeMs };
  else if (job.state === 'SUSP' && job.killRequestedBy === null) status = { type: 'suspended', timeMs };
  else if (!job.started && rng.chance(0.7)) status = { type: 'started', pid: 1000 + job.id, timeMs };
  else if (rng.chance(0.1)) status = { type: 'launchError', reason: 'exec: no such file' };
  else {
    const exitCode = rng.chance(0.8) ? 0 : rng.pick([1, 2, 137]);
    status = { type: 'finished', exitCode, signal: exitCode === 137 ? 'SIGKILL' : null, reason: null, timeMs };
  }
  // A worker re-sends now and then (a retry after a leader change): applied once.
  const runNumber = rng.chance(0.05) ? Math.max(0, job.runNumber - 1) : job.runNumber;
  return {
    label: `status job ${formatJobId(job.id)} run ${runNumber} ${status.type}`,
    body: { kind: 'status', jobId: job.id, runNumber, status },
  };
}

/**
 * A CleanFact of the leader's: some finished jobs of `state` (at most `max`), in id order, as the
 * retention loop would propose them. A job that went back to PEND since, or that a pending job's
 * dependency names, stays (apply checks).
 */
export function cleanFor(
  state: ControllerState,
  rng: SeededRandom,
  max: number,
): { body: FactBody; label: string } | undefined {
  const ids: number[] = [];
  for (const j of state.jobs.values()) {
    if (ids.length >= max) break;
    if ((j.state === 'DONE' || j.state === 'EXIT') && rng.chance(0.5)) ids.push(j.id);
  }
  if (ids.length === 0) return undefined;
  ids.sort((a, b) => a - b);
  return { label: `clean jobs ${ids.map(formatJobId).join(' ')}`, body: { kind: 'clean', jobIds: ids } };
}
