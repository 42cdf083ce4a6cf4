// What the simulator's clients ask of the controllers: real facts, encoded with the real codec.
// Clients write with sessions (client id + sequence), one request at a time, retrying the SAME
// sequence until answered. (What the simulated scheduler, workers and retention loop propose is in
// leader-facts.ts.) Every choice is drawn from the run's seeded PRNG.
//
// Besides plain submits the clients send every kind of request a user or admin can: job arrays
// (`-J c-alice-7[1-4]%2`), dependencies (`-w "done(12) && ended(c-alice-3)"`, some never met, some
// with `--dep-never kill`), hold / release / suspend / resume / kill / requeue / restart on jobs,
// whole arrays and single elements, modifies of pending jobs (`jobs modify`), and host close /
// open (`xceadmin hosts close|open`); a few of each are malformed or not allowed, and refused.

import type { SeededRandom } from '../../raft/prng.js';
import type { ControlAction, FactBody, JobSpec } from '../../statemachine/facts.js';
import { decodedSpec } from '../../statemachine/lazy-parts.js';
import type { ControllerState, Job } from '../../statemachine/state.js';
import { arrayIdOf, elementId, formatJobId, isElementId } from '../../model/job-id.js';
import { jobSpec } from '../test-cluster.js';
import { SIM_FRACTIONS, SIM_SCRATCH_RESOURCE, type SimConfig } from './sim-config.js';

/** Probability that an admin request (after the first) changes the configuration. */
export const SIM_CONFIG_CHANGE_CHANCE = 0.15;
/** Probability that an admin request (not a configuration change) closes or opens a host. */
export const SIM_HOST_CONTROL_CHANCE = 0.12;
/** Probability that one of alice's requests controls or modifies one of her own jobs instead of submitting. */
export const SIM_OWN_CONTROL_CHANCE = 0.25;
/** Probability that a python submit of alice's is a job array; its size is at most SIM_ARRAY_SIZE_MAX. */
export const SIM_ARRAY_CHANCE = 0.2;
export const SIM_ARRAY_SIZE_MAX = 5;
/** Probability that a submit of alice's carries a dependency (`-w`) on one of the jobs the view holds. */
export const SIM_DEPENDENCY_CHANCE = 0.25;

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

/**
 * A submit of alice's (python on normal/priority with fractional rusage, openfoam or mpich at
 * night), some with `-w`.
 */
function aliceSubmit(rng: SeededRandom, name: string, view: ControllerState | undefined): Request {
  const req = alicePlainSubmit(rng, name);
  if (req.body.kind !== 'submit' || !rng.chance(SIM_DEPENDENCY_CHANCE)) return req;
  const dep = dependencyFor(rng, view);
  const kill = rng.chance(0.3);
  return {
    label: `${req.label} -w "${dep}"${kill ? ' --dep-never kill' : ''}`,
    body: { ...req.body, dependency: dep, dependencyKill: kill },
  };
}

/**
 * A dependency expression on jobs of the view: by id, by name (alice's request names), on a whole
 * array (`ID[*]`) or one element, joined with && or ||; now and then one naming a job that does not
 * exist (refused: invalid_dependency) or written wrong.
 */
function dependencyFor(rng: SeededRandom, view: ControllerState | undefined): string {
  const r = rng.intBelow(20);
  if (r === 0) return 'done(999999)';
  if (r === 1) return 'done(12';
  const one = (): string => {
    const cond = rng.pick(['done', 'done', 'ended', 'exit', 'started'] as const);
    const top = Math.max(1, (view?.nextJobId ?? 1) - 1);
    const id = rng.intBetween(1, top + 1);
    const array = view?.arrays.get(id);
    if (array !== undefined && array.indices.length > 0)
      return rng.chance(0.5) ? `${cond}(${id}[*])` : `${cond}(${id}[${rng.pick(array.indices)}])`;
    const job = view?.jobs.get(id);
    if (job !== undefined && job.user === 'alice' && job.spec.jobName !== null && rng.chance(0.3))
      return `${cond}(${job.spec.jobName})`;
    return `${cond}(${id})`;
  };
  return rng.chance(0.3) ? `${one()} ${rng.pick(['&&', '||'])} ${one()}` : one();
}

/** Alice's submit without a dependency: python (sometimes an array), openfoam or mpich. */
function alicePlainSubmit(rng: SeededRandom, name: string): Request {
  const r = rng.intBelow(10);
  if (r < 6) {
    const res = rng.chance(0.7)
      ? `rusage[${SIM_SCRATCH_RESOURCE}=${fraction(rng)}]`
      : `rusage[mem=${fraction(rng)}, ${SIM_SCRATCH_RESOURCE}=${fraction(rng)}]`;
    const queue = rng.chance(0.8) ? 'normal' : 'priority';
    const jobName = rng.chance(SIM_ARRAY_CHANCE) ? arrayName(rng, name) : name;
    return {
      label: `submit python ${res}${jobName !== name ? ` -J ${jobName}` : ''}`,
      body: {
        kind: 'submit',
        user: 'alice',
        queue,
        profile: 'python',
        profileRequested: null,
        dependency: null,
        dependencyKill: false,
        spec: spec(rng, jobName, { resreq: res }),
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

/** `NAME[1-3]`, `NAME[1,3-4]`, `NAME[2-5:2]%1`: a small array (one in twenty malformed: refused, invalid_array). */
function arrayName(rng: SeededRandom, name: string): string {
  if (rng.chance(0.05)) return `${name}[3-1]`;
  const n = rng.intBetween(1, SIM_ARRAY_SIZE_MAX + 1);
  const body = rng.pick([`1-${n}`, `1,3-${2 + n}`, `2-${2 * n}:2`]);
  return `${name}[${body}]${rng.chance(0.5) ? `%${rng.intBetween(1, 3)}` : ''}`;
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
  if (kind === 'alice') return rng.chance(SIM_OWN_CONTROL_CHANCE) ? aliceOwn(rng, view) : aliceSubmit(rng, name, view);
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
  if (rng.chance(SIM_HOST_CONTROL_CHANCE)) return hostControl(rng, config, view);
  return rng.chance(0.5) ? fittingControl(rng, view, 'admin', null) : controlOf(rng, view, 'admin');
}

/**
 * `xceadmin hosts close|open`: a close of an open host (with or without a reason), an open of a
 * closed one, or a refused one.
 */
function hostControl(rng: SeededRandom, config: SimConfig, view: ControllerState | undefined): Request {
  const host = rng.chance(0.05) ? 'no-such-host' : rng.pick(config.hostNames());
  const closed = view?.closedHosts.has(host) ?? false;
  // Mostly the change that makes sense; now and then the other (refused: already closed / not closed).
  const close = rng.chance(0.85) ? !closed : closed;
  const reason = close && rng.chance(0.7) ? rng.pick(['disk replacement', 'kernel update', 'bad DIMM']) : null;
  return {
    label: `hosts ${close ? 'close' : 'open'} ${host}${reason !== null ? ` (${reason})` : ''}`,
    body: { kind: 'hostControl', host, close, reason, user: 'admin' },
  };
}

/** A job id of the view: a plain job or an array (as a whole), or one element of an array. */
function someJobId(rng: SeededRandom, view: ControllerState | undefined): number {
  const top = Math.max(1, (view?.nextJobId ?? 1) - 1);
  const jobId = rng.intBetween(1, top + 1);
  const array = view?.arrays.get(jobId);
  if (array !== undefined && array.indices.length > 0 && rng.chance(0.5))
    return elementId(jobId, rng.pick(array.indices));
  return jobId;
}

/**
 * One of `user`'s (null: anyone's) jobs of the view in `states` (a plain job, or an element when
 * `elements`), or undefined.
 */
function jobOf(
  rng: SeededRandom,
  view: ControllerState | undefined,
  user: string | null,
  states: readonly Job['state'][],
  elements: boolean,
): Job | undefined {
  if (view === undefined) return undefined;
  const found: Job[] = [];
  for (const j of view.jobs.values())
    if ((user === null || j.user === user) && states.includes(j.state) && (elements || !isElementId(j.id)))
      found.push(j);
  return found.length === 0 ? undefined : rng.pick(found);
}

const CONTROL_WEIGHTED: readonly ControlAction[] = [
  'kill',
  'kill',
  'requeue',
  'restart',
  'hold',
  'hold',
  'release',
  'release',
  'suspend',
  'suspend',
  'resume',
  'resume',
];

/** A control of some job, array or element by `user` (a session belongs to one user: its client's). */
function controlOf(rng: SeededRandom, view: ControllerState | undefined, user: string): Request {
  const jobId = someJobId(rng, view);
  const action = rng.pick(CONTROL_WEIGHTED);
  return { label: `${action} job ${formatJobId(jobId)} as ${user}`, body: { kind: 'control', jobId, action, user } };
}

/**
 * Alice on her own jobs: a modify of a pending one, a control that fits, or any control (refused
 * when it does not fit).
 */
function aliceOwn(rng: SeededRandom, view: ControllerState | undefined): Request {
  const r = rng.intBelow(10);
  if (r < 3) {
    const job = jobOf(rng, view, 'alice', ['PEND'], rng.chance(0.1));
    if (job !== undefined) return modifyOf(rng, job);
  }
  return r >= 8 ? controlOf(rng, view, 'alice') : fittingControl(rng, view, 'alice', 'alice');
}

/**
 * `user` on a job of `owner`'s (null: anyone's) with the control that fits its state: hold a
 * pending one, release a held one, suspend a running one, resume a suspended one (or kill, requeue);
 * now and then on its whole array, where it goes to each element it fits.
 */
function fittingControl(
  rng: SeededRandom,
  view: ControllerState | undefined,
  user: string,
  owner: string | null,
): Request {
  const job = jobOf(rng, view, owner, ['PEND', 'RUN', 'SUSP'], true);
  if (job === undefined) return controlOf(rng, view, user);
  const jobId = isElementId(job.id) && rng.chance(0.3) ? arrayIdOf(job.id) : job.id;
  const action: ControlAction =
    job.state === 'PEND'
      ? job.heldBy === null
        ? rng.pick(['hold', 'hold', 'kill'] as const)
        : 'release'
      : job.state === 'RUN'
        ? rng.pick(['suspend', 'suspend', 'requeue', 'kill'] as const)
        : 'resume';
  return {
    label: `${action} job ${formatJobId(jobId)} as ${user}`,
    body: { kind: 'control', jobId, action, user },
  };
}

/**
 * `xcecli jobs modify` of alice's pending job: another queue, tasks or resource requirement, now and
 * then another profile (the additive rule may refuse it) or a reserved variable (refused).
 */
function modifyOf(rng: SeededRandom, job: Job): Request {
  const s = decodedSpec(job.spec);
  let queue = job.queue;
  let profile = job.profile;
  let profileRequested = job.profileRequested;
  let spec: JobSpec = s;
  let what: string;
  const r = rng.intBelow(10);
  if (r < 3) {
    queue = queue === 'normal' ? 'priority' : queue === 'priority' ? 'normal' : queue;
    what = `-q ${queue}`;
  } else if (r < 6) {
    const resreq = `rusage[${SIM_SCRATCH_RESOURCE}=${fraction(rng)}]`;
    spec = { ...s, resreq };
    what = `-R ${resreq}`;
  } else if (r < 8) {
    const tasks = rng.pick([1, 2, 4, 32, 64]);
    spec = { ...s, tasks };
    what = `-n ${tasks}`;
  } else if (r < 9) {
    profile = rng.pick(['python', 'openfoam', 'mpich']);
    profileRequested = profile;
    what = `--app ${profile}`;
  } else {
    spec = { ...s, env: [...s.env, { name: 'XCE_JOB_ID', value: '1' }] };
    what = '-e XCE_JOB_ID=1';
  }
  return {
    label: `modify job ${formatJobId(job.id)} ${what} as alice`,
    body: { kind: 'modify', jobId: job.id, user: 'alice', queue, profile, profileRequested, spec },
  };
}
