// The replicated controller state: the configuration, the jobs, the session table, the hosts'
// registrations. Every controller holds the same value after applying the same log prefix
// (apply.ts); the snapshot (snapshot.ts) writes all of it and `restore` rebuilds it exactly.
//
// FIELD COMPLETENESS: JOB_FIELDS below must name every field of Job (the compiler checks it), and
// snapshot.ts writes each of them; state.property.test.ts fails when a field does not survive
// snapshot → restore and log → replay.

import type { ClusterConfig } from '../model/config-types.js';
import type { DispatchRecord } from './dispatch-record.js';
import type { RegisteredHost } from './host-capacity.js';
import type { ConfigFile, JobSpec } from './facts.js';
import type { SessionTable } from './sessions.js';
import { emptyUsage, type Usage } from './usage.js';

export type JobState = 'PEND' | 'RUN' | 'DONE' | 'EXIT';
export const JOB_STATES: readonly JobState[] = ['PEND', 'RUN', 'DONE', 'EXIT'];

/**
 * Most active jobs (pending and running) the state holds; a submit beyond it is refused. Finished
 * jobs leave the state by CleanFacts (retention.ts: at most `finished_jobs_max`, itself at most
 * FINISHED_JOBS_MAX_LIMIT), so the whole state stays below the snapshot's bound, one message of
 * at most MESSAGE_BYTES_MAX (2 GiB) at about 700 bytes per job.
 */
export const JOBS_MAX = 2_000_000;

export interface Job {
  readonly id: number;
  state: JobState;
  readonly user: string;
  readonly queue: string;
  /** The profile as recorded at submit (the target of an alias, or the default's name); null: a record from before profiles. */
  readonly profile: string | null;
  /** The name the user gave with --app; null when none. */
  readonly profileRequested: string | null;
  /**
   * The job's own values, never merged. A finished job restored from a snapshot holds them encoded
   * (lazy-parts.ts); apply replaces them by their decoded form when the job goes back to PEND.
   */
  spec: JobSpec;
  readonly submitTimeMs: number;
  /** Runs started so far (a declined dispatch is not a run). */
  runNumber: number;
  /** Times the job went back to PEND by requeue or restart. */
  requeueCount: number;
  /** The current (or, once finished, the last) run's frozen record; null while pending. Held encoded like `spec` for a restored finished job. */
  record: DispatchRecord | null;
  dispatchTimeMs: number;
  /** The worker reported the job started (pid and time below). */
  started: boolean;
  pid: number;
  startTimeMs: number;
  endTimeMs: number;
  exitCode: number;
  /** The signal that ended the job, e.g. SIGKILL; null when it exited. */
  signal: string | null;
  /** Why the job ended as it did (finished reason, launch error, kill). */
  reason: string | null;
  /** A kill was requested while running: the user who asked. */
  killRequestedBy: string | null;
  /** Why the last dispatch was declined (shown as the pend reason until the next try). */
  lastDecline: string | null;
}

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
] as const satisfies readonly (keyof Job)[];
const jobFieldsComplete: NamesEveryField<Job, typeof JOB_FIELDS> = true;
void jobFieldsComplete;

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

export interface ControllerState {
  /** Index of the last log entry applied. */
  appliedIndex: number;
  /** The latest leader time seen in a fact (never goes back): sessions expire by it. */
  logTimeMs: number;
  /** The id the next accepted submit gets. */
  nextJobId: number;
  /** null until the first ConfigFact is applied. */
  config: ConfigState | null;
  /** By id; insertion order is id order. */
  readonly jobs: Map<number, Job>;
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
}

/** Every field of ControllerState (checked like JOB_FIELDS). */
export const STATE_FIELDS = [
  'appliedIndex',
  'logTimeMs',
  'nextJobId',
  'config',
  'jobs',
  'sessions',
  'hosts',
  'hostCredentials',
  'revokedTokens',
  'usage',
  'jobsCleaned',
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
    sessions: new Map(),
    hosts: new Map(),
    hostCredentials: new Map(),
    revokedTokens: new Map(),
    usage: emptyUsage(),
    jobsCleaned: 0,
  };
}
