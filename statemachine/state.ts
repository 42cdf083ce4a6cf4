// The replicated controller state: the configuration, the jobs, the session table, the hosts'
// registrations. Every controller holds the same value after applying the same log prefix
// (apply.ts); the snapshot (snapshot.ts) writes all of it and `restore` rebuilds it exactly.
//
// FIELD COMPLETENESS: JOB_FIELDS below must name every field of Job (the compiler checks it), and
// snapshot.ts writes each of them; state.property.test.ts fails when a field does not survive
// snapshot → restore and log → replay.

import type { ClusterConfig } from '../model/config-types.js';
import type { DepExpr } from '../model/dependency.js';
import type { DispatchRecord } from './dispatch-record.js';
import type { RegisteredHost } from './host-capacity.js';
import type { ConfigFile, JobSpec } from './facts.js';
import type { SessionTable } from './sessions.js';
import { emptyUsage, type Usage } from './usage.js';

/**
 * PEND → RUN → DONE | EXIT; SUSP is a RUN job its worker stopped (`jobs suspend`, SIGSTOP): it
 * keeps its hosts and slots, and `jobs resume` (SIGCONT) makes it RUN again. In the order of
 * schema/facts.capnp `JobState`.
 */
export type JobState = 'PEND' | 'RUN' | 'DONE' | 'EXIT' | 'SUSP';
export const JOB_STATES: readonly JobState[] = ['PEND', 'RUN', 'DONE', 'EXIT', 'SUSP'];

/** A dispatched job that has not ended: RUN, or SUSP (it holds its record's hosts and slots). */
export const isRunning = (j: { readonly state: JobState }): boolean => j.state === 'RUN' || j.state === 'SUSP';

/** Events a job keeps (the oldest dropped first): a bound on what one job can hold. */
export const JOB_EVENTS_MAX = 64;

/** Something done to a job that is not a run (schema/facts.capnp `JobEvent`). */
export interface JobEvent {
  /** hold | release | suspend | resume (asked for), suspended | resumed (the worker did it), modify. */
  readonly action: string;
  /** Who asked; null for a worker's report. */
  readonly user: string | null;
  readonly timeMs: number;
  /** What a modify changed, or where the worker signalled the job; null when nothing to add. */
  readonly detail: string | null;
}

/**
 * Most active jobs (pending and running) the state holds; a submit beyond it is refused. Finished
 * jobs leave the state by CleanFacts (retention.ts: at most `finished_jobs_max`, itself at most
 * FINISHED_JOBS_MAX_LIMIT), so the whole state stays below the snapshot's bound, one message of
 * at most MESSAGE_BYTES_MAX (2 GiB) at about 700 bytes per job.
 */
export const JOBS_MAX = 2_000_000;

/**
 * A job of the state. Every field is readonly: a job changes only through editJob below, which
 * first tells whoever watches the state's job edits (a snapshot being written keeps the job as it
 * was: copy-on-write, snapshot.ts). So no change of a job can bypass the snapshot's copy.
 */
export interface Job {
  readonly id: number;
  readonly state: JobState;
  readonly user: string;
  /** The queue (a pending job's can change: jobs modify -q). */
  readonly queue: string;
  /** The profile as recorded at submit or modify (the target of an alias, or the default's name); null: a record from before profiles. */
  readonly profile: string | null;
  /** The name the user gave with --app; null when none. */
  readonly profileRequested: string | null;
  /**
   * The job's own values, never merged. A finished job restored from a snapshot holds them encoded
   * (lazy-parts.ts); apply replaces them by their decoded form when the job goes back to PEND.
   */
  readonly spec: JobSpec;
  readonly submitTimeMs: number;
  /** Runs started so far (a declined dispatch is not a run). */
  readonly runNumber: number;
  /** Times the job went back to PEND by requeue or restart. */
  readonly requeueCount: number;
  /** The current (or, once finished, the last) run's frozen record; null while pending. Held encoded like `spec` for a restored finished job. */
  readonly record: DispatchRecord | null;
  readonly dispatchTimeMs: number;
  /** The worker reported the job started (pid and time below). */
  readonly started: boolean;
  readonly pid: number;
  readonly startTimeMs: number;
  readonly endTimeMs: number;
  readonly exitCode: number;
  /** The signal that ended the job, e.g. SIGKILL; null when it exited. */
  readonly signal: string | null;
  /** Why the job ended as it did (finished reason, launch error, kill). */
  readonly reason: string | null;
  /** A kill was requested while running: the user who asked. */
  readonly killRequestedBy: string | null;
  /** Why the last dispatch was declined (shown as the pend reason until the next try). */
  readonly lastDecline: string | null;
  /** The user who held the pending job (`jobs hold`): the scheduler skips it until released. null: not held. */
  readonly heldBy: string | null;
  /** Hold, release, suspend, resume and modify, oldest first (at most JOB_EVENTS_MAX). */
  readonly events: readonly JobEvent[];
  /** `-w`: what must hold before the job may run; null: nothing. An array element shares its array's. */
  readonly dependency: JobDependency | null;
}

declare const draft: unique symbol;

/**
 * A job being changed (apply-*.ts): its fields writable. Only editJob makes one (the brand cannot
 * be written elsewhere), so every change of a job passes there.
 */
export type JobDraft = { -readonly [K in keyof Job]: Job[K] } & { readonly [draft]: true };

/**
 * Hears of a job of the state before it first changes from here on, and before it leaves the state
 * (snapshot.ts: copy-on-write, and the jobs a snapshot being written has not reached yet).
 */
export interface JobEditWatcher {
  readonly edited: (job: Job) => void;
  readonly removed: (job: Job) => void;
}

// Per state, not a field of it: not replicated, not in the snapshot, not compared by the tests.
const editWatchers = new WeakMap<ControllerState, Set<JobEditWatcher>>();

/** Tells `watcher` of every job of `state` about to change or leave, until the function returned is called. */
export function watchJobEdits(state: ControllerState, watcher: JobEditWatcher): () => void {
  const set = editWatchers.get(state) ?? new Set<JobEditWatcher>();
  editWatchers.set(state, set);
  set.add(watcher);
  return () => {
    set.delete(watcher);
    if (set.size === 0) editWatchers.delete(state);
  };
}

/**
 * The job of `state`, to be changed: the watchers of the state's job edits hear of it first. The
 * only way to a JobDraft; nested values (events, spec, record, dependency) are replaced, never
 * changed in place.
 */
export function editJob(state: ControllerState, job: Job): JobDraft {
  const watchers = editWatchers.get(state);
  if (watchers !== undefined) for (const w of watchers) w.edited(job);
  return job as JobDraft;
}

/** Takes `job` out of `state.jobs`, the watchers of the state's job edits told first: the only way a job leaves. */
export function removeJob(state: ControllerState, job: Job): void {
  const watchers = editWatchers.get(state);
  if (watchers !== undefined) for (const w of watchers) w.removed(job);
  state.jobs.delete(job.id);
}

/** Adds an event to the job (a new list: the old one may be a snapshot's), dropping the oldest beyond JOB_EVENTS_MAX. */
export function addJobEvent(job: JobDraft, e: JobEvent): void {
  const events = [...job.events, e];
  job.events = events.length > JOB_EVENTS_MAX ? events.slice(events.length - JOB_EVENTS_MAX) : events;
}

/** A job's dependency (`-w`), kept as written and with its names resolved to job ids at submit. */
export interface JobDependency {
  /** As the user wrote it. */
  readonly text: string;
  /** Canonical, every reference a job id (model/dependency.ts formatDependency): what is evaluated. */
  readonly resolved: string;
  /** `resolved`, parsed (derived: not stored). */
  readonly expr: DepExpr;
  /** `--dep-never kill`: a dependency that can never be met kills the job; false: the job pends saying so. */
  readonly killWhenNever: boolean;
}

/**
 * A job array (`-J "sweep[1-1000]%50"`): what its elements share, once. Each element is a Job in
 * `ControllerState.jobs` under its element id (model/job-id.ts) whose user, queue, profile, spec and
 * dependency are this array's objects (not copies), and whose own fields are its run's state. The
 * snapshot writes these shared values once, here, and each element without them. Its spec's jobName
 * is the array's name as given (`sweep[1-1000]%50`).
 */
export interface JobArray extends Pick<
  Job,
  'id' | 'user' | 'queue' | 'profile' | 'profileRequested' | 'spec' | 'submitTimeMs' | 'dependency'
> {
  /** The name without the index part (`sweep`); derived from spec.jobName. */
  readonly name: string;
  /** `%N`: most elements running at once; 0: no limit. Derived from spec.jobName. */
  readonly limit: number;
  /** The indices, ascending. Derived from spec.jobName. */
  readonly indices: readonly number[];
}

/** Every field of JobArray (checked like JOB_FIELDS); name, limit and indices are derived from spec.jobName. */
export const JOB_ARRAY_FIELDS = [
  'id',
  'user',
  'queue',
  'profile',
  'profileRequested',
  'spec',
  'submitTimeMs',
  'dependency',
  'name',
  'limit',
  'indices',
] as const satisfies readonly (keyof JobArray)[];

/**
 * `true` when `Names` lists every field of T; otherwise the missing field names, so that assigning
 * `true` fails to compile and the error names them.
 */
type NamesEveryField<T, Names extends readonly (keyof T)[]> = [Exclude<keyof T, Names[number]>] extends [never]
  ? true
  : Exclude<keyof T, Names[number]>;

/** Every field of Job; the type below fails to compile when a field is missing here. */
export const JOB_FIELDS = [
  'id',
  'state',
  'user',
  'queue',
  'profile',
  'profileRequested',
  'spec',
  'submitTimeMs',
  'runNumber',
  'requeueCount',
  'record',
  'dispatchTimeMs',
  'started',
  'pid',
  'startTimeMs',
  'endTimeMs',
  'exitCode',
  'signal',
  'reason',
  'killRequestedBy',
  'lastDecline',
  'heldBy',
  'events',
  'dependency',
] as const satisfies readonly (keyof Job)[];
const jobFieldsComplete: NamesEveryField<Job, typeof JOB_FIELDS> = true;
void jobFieldsComplete;
const arrayFieldsComplete: NamesEveryField<JobArray, typeof JOB_ARRAY_FIELDS> = true;
void arrayFieldsComplete;

export interface ConfigState {
  /** The source files as the ConfigFact carried them (the snapshot stores these). */
  readonly files: readonly ConfigFile[];
  /** The validated configuration built from them by loadConfig. */
  readonly cluster: ClusterConfig;
}

/** A host's credential: its enrolment epoch (the credential derives from it) and whether it is revoked. */
export interface HostCredentialState {
  readonly epoch: number;
  readonly revoked: boolean;
}

/** Most revoked tokens held at once (each until its token expires); a revocation beyond it is refused. */
export const REVOKED_TOKENS_MAX = 100_000;
/** Most hosts with a credential state (revoked or enrolled again). */
export const CREDENTIAL_HOSTS_MAX = 65_536;

/** A host an administrator closed (`xceadmin hosts close`): it gets no new jobs until opened. */
export interface ClosedHost {
  readonly host: string;
  /** Why; null: none given. */
  readonly reason: string | null;
  /** The administrator who closed it. */
  readonly user: string;
  /** When (the fact's time). */
  readonly timeMs: number;
}

export interface ControllerState {
  /** Index of the last log entry applied. */
  appliedIndex: number;
  /** The latest leader time seen in a fact (never goes back): sessions expire by it. */
  logTimeMs: number;
  /** The id the next accepted submit gets. */
  nextJobId: number;
  /** null until the first ConfigFact is applied. */
  config: ConfigState | null;
  /**
   * By id; insertion order is submit order (id order for plain jobs; an array's elements follow
   * the array's id, in index order, under their element ids: model/job-id.ts).
   */
  readonly jobs: Map<number, Job>;
  /** Job arrays by id: what their elements share. An array leaves when its last element is cleaned. */
  readonly arrays: Map<number, JobArray>;
  readonly sessions: SessionTable;
  /** Each host's last registration by its worker, by host name (host-capacity.ts: what the scheduler uses). */
  readonly hosts: Map<string, RegisteredHost>;
  /** Hosts enrolled again or revoked, by name (a host not here is at epoch 0, not revoked). */
  readonly hostCredentials: Map<string, HostCredentialState>;
  /** Revoked user tokens: jti → the token's expiry (ms); dropped once the log's time passes it. */
  readonly revokedTokens: Map<string, number>;
  /** Derived from the running jobs' records (rebuilt on restore, not stored). */
  readonly usage: Usage;
  /** Finished jobs removed from the state by CleanFacts so far (their records are in accounting). */
  jobsCleaned: number;
  /** Hosts an administrator closed, by host name (apply-host-control.ts): the scheduler places no job on them. */
  readonly closedHosts: Map<string, ClosedHost>;
}

/** Every field of ControllerState (checked like JOB_FIELDS). */
export const STATE_FIELDS = [
  'appliedIndex',
  'logTimeMs',
  'nextJobId',
  'config',
  'jobs',
  'arrays',
  'sessions',
  'hosts',
  'hostCredentials',
  'revokedTokens',
  'usage',
  'jobsCleaned',
  'closedHosts',
] as const satisfies readonly (keyof ControllerState)[];
const stateFieldsComplete: NamesEveryField<ControllerState, typeof STATE_FIELDS> = true;
void stateFieldsComplete;

export function emptyState(): ControllerState {
  return {
    appliedIndex: 0,
    logTimeMs: 0,
    nextJobId: 1,
    config: null,
    jobs: new Map(),
    arrays: new Map(),
    sessions: new Map(),
    hosts: new Map(),
    hostCredentials: new Map(),
    revokedTokens: new Map(),
    usage: emptyUsage(),
    jobsCleaned: 0,
    closedHosts: new Map(),
  };
}
