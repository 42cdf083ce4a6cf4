// What the simulator's clients, scheduler and workers ask of the controllers: real facts, encoded
// with the real codec. Clients write with sessions (client id + sequence), one request at a time,
// retrying the SAME sequence until answered; the scheduler (played by the simulator) dispatches
// pending jobs onto hosts it picks, as the leader's scheduler would, right or wrong; the workers
// report runs started and finished. Every choice is drawn from the run's seeded PRNG.

import type { SeededRandom } from '../../raft/prng.js';
import { buildDispatchRecord } from '../../statemachine/dispatch-record.js';
import type { FactBody, JobSpec, JobStatus } from '../../statemachine/facts.js';
import { liveMerge } from '../../statemachine/jobs.js';
import type { ControllerState, Job } from '../../statemachine/state.js';
import { jobSpec } from '../test-cluster.js';
import { SIM_FRACTIONS, SIM_SCRATCH_RESOURCE, type SimConfig } from './sim-config.js';

/** Probability that an admin request (after the first) changes the configuration. */
export const SIM_CONFIG_CHANGE_CHANCE = 0.15;

/** One kind of client: who it submits as, and what. */
export type ClientKind = 'alice' | 'bob' | 'admin';

/** The job name that ties a job to the request that submitted it (exactly-once check). */
export function jobNameFor(clientId: string, sequence: number): string {
  return `${clientId}-${sequence}`;
}

/** What a client asks next. `label` is for the trace. */
export interface Request {
  readonly body: FactBody;
  readonly label: string;
}

function fraction(rng: SeededRandom): number {
  return rng.pick(SIM_FRACTIONS);
}

function spec(rng: SeededRandom, name: string, o: Partial<JobSpec>): JobSpec {
  return jobSpec({ command: ['./run.sh', `--case=${rng.intBelow(5)}`], jobName: name, ...o });
}

/** A submit of alice's (python on normal/priority with fractional rusage, openfoam or mpich at night). */
function aliceSubmit(rng: SeededRandom, name: string): Request {
  const r = rng.intBelow(10);
  if (r < 6) {
    const res = rng.chance(0.7)
      ? `rusage[${SIM_SCRATCH_RESOURCE}=${fraction(rng)}]`
      : `rusage[mem=${fraction(rng)}, ${SIM_SCRATCH_RESOURCE}=${fraction(rng)}]`;
    const queue = rng.chance(0.8) ? 'normal' : 'priority';
    return {
      label: `submit python ${res}`,
      body: {
        kind: 'submit',
        user: 'alice',
        queue,
        profile: 'python',
        profileRequested: null,
        dependency: null,
        dependencyKill: false,
        spec: spec(rng, name, { resreq: res }),
      },
    };
  }
  if (r < 8) {
    const tasks = rng.pick([32, 40, 64]);
    return {
      label: `submit openfoam -n ${tasks}`,
      body: {
        kind: 'submit',
        user: 'alice',
        queue: 'night',
        profile: 'openfoam',
        profileRequested: rng.chance(0.3) ? 'openfoam-old' : 'openfoam',
        dependency: null,
        dependencyKill: false,
        spec: spec(rng, name, { tasks }),
      },
    };
  }
  const tasks = rng.pick([2, 4, 8]);
  return {
    label: `submit mpich -n ${tasks}`,
    body: {
      kind: 'submit',
      user: 'alice',
      queue: 'night',
      profile: 'mpich',
      profileRequested: 'mpich',
      dependency: null,
      dependencyKill: false,
      spec: spec(rng, name, { tasks, resreq: `rusage[${SIM_SCRATCH_RESOURCE}=${fraction(rng)}]` }),
    },
  };
}

/** A submit of bob's: GPU training with a fractional GPU share. */
function bobSubmit(rng: SeededRandom, name: string): Request {
  const gpu = rng.pick([0.3, 0.7, 1]);
  return {
    label: `submit pytorch-gpu gpu=${gpu}`,
    body: {
      kind: 'submit',
      user: 'bob',
      queue: 'normal',
      profile: 'pytorch-gpu',
      profileRequested: 'pytorch-gpu',
      dependency: null,
      dependencyKill: false,
      spec: spec(rng, name, { resreq: `rusage[gpu=${gpu}]`, tasks: rng.pick([1, 2]) }),
    },
  };
}

/**
 * The next request of a client. The admin upgrades the configuration (a changed copy of the
 * shipped one) or controls a job; the others submit. `view` is some controller's state (what the
 * client last saw): only for picking job ids.
 */
export function nextRequest(
  kind: ClientKind,
  rng: SeededRandom,
  name: string,
  config: SimConfig,
  view: ControllerState | undefined,
  sequence: number,
): Request {
  if (kind === 'alice') return aliceSubmit(rng, name);
  // Bob now and then tries to control someone's job (refused unless it is his: not_authorized).
  if (kind === 'bob') return rng.chance(0.15) ? controlOf(rng, view, 'bob') : bobSubmit(rng, name);
  // The admin's first request installs the shipped configuration; later ones change it now and then
  // (each ConfigFact is validated by every node: loadConfig parses YAML, the dearest apply there is).
  if (sequence === 1)
    return {
      label: 'config v0: the shipped configuration',
      body: { kind: 'config', files: config.files(), user: 'admin' },
    };
  if (rng.chance(SIM_CONFIG_CHANGE_CHANCE)) {
    const what = config.mutate(rng);
    return {
      label: `config v${config.version}: ${what}`,
      body: { kind: 'config', files: config.files(), user: 'admin' },
    };
  }
  return controlOf(rng, view, 'admin');
}

/** A kill, requeue or restart of some job, by `user` (a session belongs to one user: its client's). */
function controlOf(rng: SeededRandom, view: ControllerState | undefined, user: string): Request {
  const top = Math.max(1, (view?.nextJobId ?? 1) - 1);
  const jobId = rng.intBetween(1, top + 1);
  const action = rng.pick(['kill', 'kill', 'kill', 'requeue', 'restart'] as const);
  return { label: `${action} job ${jobId} as ${user}`, body: { kind: 'control', jobId, action, user } };
}

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
    label: `dispatch job ${job.id} run ${runNumber} on ${placement.map((p) => `${p.host}:${p.tasks}`).join('+')}`,
    body: { kind: 'dispatch', jobId: job.id, runNumber, placement, record, schedulerHash: hash },
  };
}

/** A worker's report on a running job: started, then finished (or a launch error). */
export function statusFor(job: Job, rng: SeededRandom, timeMs: number): { body: FactBody; label: string } {
  let status: JobStatus;
  if (!job.started && rng.chance(0.7)) status = { type: 'started', pid: 1000 + job.id, timeMs };
  else if (rng.chance(0.1)) status = { type: 'launchError', reason: 'exec: no such file' };
  else {
    const exitCode = rng.chance(0.8) ? 0 : rng.pick([1, 2, 137]);
    status = { type: 'finished', exitCode, signal: exitCode === 137 ? 'SIGKILL' : null, reason: null, timeMs };
  }
  // A worker re-sends now and then (a retry after a leader change): applied once.
  const runNumber = rng.chance(0.05) ? Math.max(0, job.runNumber - 1) : job.runNumber;
  return {
    label: `status job ${job.id} run ${runNumber} ${status.type}`,
    body: { kind: 'status', jobId: job.id, runNumber, status },
  };
}
