// The controller's facts as TypeScript values: what the leader proposes, what Raft carries (as
// Cap'n Proto bytes, schema/facts.capnp; the codec is facts-codec.ts) and what `apply` consumes.
// Plus the results apply returns, which the session table keeps for exactly-once replies.

import type { DispatchRecord, HostTasks } from './dispatch-record.js';
import type { RegisteredHost } from './host-capacity.js';

export type { JobSpec } from '../model/job-spec.js';
import type { JobSpec } from '../model/job-spec.js';

export interface ConfigFile {
  readonly path: string;
  readonly text: string;
}

export interface NoopFact {
  readonly kind: 'noop';
}

/** A whole cluster configuration as its source files; apply validates it with loadConfig. */
export interface ConfigFact {
  readonly kind: 'config';
  readonly files: readonly ConfigFile[];
  /** The admin who proposed it. */
  readonly user: string | null;
}

export interface SubmitFact {
  readonly kind: 'submit';
  readonly user: string;
  readonly queue: string;
  readonly spec: JobSpec;
  /**
   * The profile as recorded: an alias's target when the user named an alias, the current default's
   * name when the user named none. null only in records written before profiles existed.
   */
  readonly profile: string | null;
  /** The name the user gave (`--app`), null when none. */
  readonly profileRequested: string | null;
  /** `-w` as the user wrote it (names are resolved to ids when applied); null: none. */
  readonly dependency: string | null;
  /** `--dep-never kill`: kill the job when its dependency can never be met (false: it pends saying so). */
  readonly dependencyKill: boolean;
}

export interface DispatchFact {
  readonly kind: 'dispatch';
  readonly jobId: number;
  /** The run this dispatch starts: the job's current run number + 1. */
  readonly runNumber: number;
  readonly placement: readonly HostTasks[];
  /** null only in records written before profiles existed (no profile, mode direct). */
  readonly record: DispatchRecord | null;
  /** The profile hash the scheduler merged with; null: the scheduler sent none, skip the check. */
  readonly schedulerHash: string | null;
}

export type JobStatus =
  | { readonly type: 'started'; readonly pid: number; readonly timeMs: number }
  | {
      readonly type: 'finished';
      readonly exitCode: number;
      readonly signal: string | null;
      readonly reason: string | null;
      readonly timeMs: number;
    }
  | { readonly type: 'launchError'; readonly reason: string }
  /** The worker stopped (SIGSTOP) or continued (SIGCONT) the job's process group (suspend / resume). */
  | { readonly type: 'suspended' | 'resumed'; readonly timeMs: number };

export interface JobStatusFact {
  readonly kind: 'status';
  readonly jobId: number;
  readonly runNumber: number;
  readonly status: JobStatus;
}

export type ControlAction =
  'kill' | 'requeue' | 'restart' | 'hold' | 'release' | 'suspend' | 'resume' | 'dependencyNever';
/**
 * In the order of schema/facts.capnp `ControlAction`. `dependencyNever` is the leader's own (the
 * scheduler found a pending job's dependency can never be met, and the job asked to be killed then:
 * `--dep-never kill`); apply checks it again.
 */
export const CONTROL_ACTIONS: readonly ControlAction[] = [
  'kill',
  'requeue',
  'restart',
  'hold',
  'release',
  'suspend',
  'resume',
  'dependencyNever',
];

export interface JobControlFact {
  readonly kind: 'control';
  readonly jobId: number;
  readonly action: ControlAction;
  readonly user: string;
}

/**
 * A change of a pending job's values (`xcecli jobs modify`, LSF `bmod`): the job's whole new values
 * as the leader admitted them (statemachine/admission.ts); apply admits them again before it
 * replaces the job's and records the change in the job's events.
 */
export interface ModifyFact {
  readonly kind: 'modify';
  readonly jobId: number;
  /** Who asked (RBAC re-checked in apply). */
  readonly user: string;
  readonly queue: string;
  /** As recorded (an alias's target); null only for a job recorded before profiles. */
  readonly profile: string | null;
  readonly profileRequested: string | null;
  readonly spec: JobSpec;
}

/** A worker registered its host with the leader: what it says the host has (host-capacity.ts). */
export interface HostRegisteredFact {
  readonly kind: 'host';
  readonly registration: RegisteredHost;
}

/**
 * The leader's decision that these finished jobs leave the replicated state (retention over, or
 * more finished jobs than `finished_jobs_max`). Apply removes each one still DONE or EXIT and hands
 * its final record to the caller, which writes it to the accounting store (daemon/accounting/).
 */
export interface CleanFact {
  readonly kind: 'clean';
  /** In id order, each once. */
  readonly jobIds: readonly number[];
}

/** An administrator closes a host (it gets no new jobs; its running ones go on) or opens it again (`xceadmin hosts close|open`). */
export interface HostControlFact {
  readonly kind: 'hostControl';
  readonly host: string;
  /** true: close; false: open. */
  readonly close: boolean;
  /** Why (shown by `xcecli hosts`); null: none given. */
  readonly reason: string | null;
  /** Who asked (RBAC is re-checked in apply: cluster:admin). */
  readonly user: string;
}

export type CredentialAction = 'revokeHost' | 'enrollHost' | 'revokeToken';
export const CREDENTIAL_ACTIONS: readonly CredentialAction[] = ['revokeHost', 'enrollHost', 'revokeToken'];

/** Who may speak for whom (issue 19): a host revoked or enrolled again, a user token revoked. */
export interface CredentialFact {
  readonly kind: 'credential';
  readonly action: CredentialAction;
  /** The host name, or the token's jti. */
  readonly name: string;
  /** revokeToken: the token's expiry, ms since the epoch (the entry is dropped after it); 0 otherwise. */
  readonly untilMs: number;
  /** The admin who asked. */
  readonly user: string;
}

/**
 * Several of the leader's own facts in one log entry: the dispatch decisions of one scheduler pass,
 * the workers' statuses of one flush (issue 14). Apply applies each dispatch, then each status, as
 * its single fact would be (same time, same checks) and returns their results in that order. A batch
 * never carries a client session.
 */
export interface BatchFact {
  readonly kind: 'batch';
  readonly dispatches: readonly DispatchFact[];
  readonly statuses: readonly JobStatusFact[];
}

export type FactBody =
  | NoopFact
  | ConfigFact
  | SubmitFact
  | DispatchFact
  | JobStatusFact
  | JobControlFact
  | HostRegisteredFact
  | CleanFact
  | ModifyFact
  | HostControlFact
  | CredentialFact
  | BatchFact;

export interface Fact {
  /** The client session; null for the leader's own facts (dispatch, status, no-op). */
  readonly clientId: string | null;
  /** The client's request number (from 1); 0 with no client. */
  readonly sequence: number;
  /** The leader's clock when it proposed the fact, ms since the epoch. */
  readonly timeMs: number;
  readonly body: FactBody;
}

// ---- results ----

/** Why a request was refused; each comes with a message a user can act on. */
export type RejectCode =
  | 'no_config'
  | 'config_invalid'
  | 'default_dangling'
  | 'profile_not_defined'
  | 'queue_not_defined'
  | 'additive_rule'
  | 'resreq_syntax'
  | 'unknown_resource'
  | 'reserved_env'
  | 'not_authorized'
  | 'job_not_found'
  | 'bad_state'
  | 'session_unknown'
  | 'stale_sequence'
  | 'decode_error'
  | 'too_many_jobs'
  | 'invalid_job'
  | 'host_not_configured'
  | 'invalid_registration'
  | 'invalid_reason'
  | 'invalid_array'
  | 'invalid_dependency';

/** Why a dispatch was declined: the job stays pending and the scheduler tries again. */
export type DeclineCode = 'profile_not_defined' | 'profile_changed' | 'resources' | 'stale' | 'no_config';

export interface NameCount {
  readonly name: string;
  readonly isAlias: boolean;
  readonly pendingJobs: number;
}

export type ApplyResult =
  | { readonly kind: 'noop' }
  | { readonly kind: 'submitted'; readonly jobId: number }
  | { readonly kind: 'rejected'; readonly code: RejectCode; readonly message: string }
  | {
      readonly kind: 'configApplied';
      /** Removed profiles and aliases still named by pending jobs, with counts. */
      readonly inUse: readonly NameCount[];
      readonly warnings: readonly string[];
    }
  | { readonly kind: 'dispatched'; readonly jobId: number; readonly runNumber: number }
  | { readonly kind: 'declined'; readonly jobId: number; readonly code: DeclineCode; readonly message: string }
  | { readonly kind: 'statusApplied'; readonly jobId: number }
  | { readonly kind: 'ignored'; readonly jobId: number; readonly message: string }
  | { readonly kind: 'controlled'; readonly jobId: number }
  | { readonly kind: 'hostRegistered' }
  /** A CleanFact: how many jobs left the state (the rest had gone back to PEND, or were gone). */
  | { readonly kind: 'cleaned'; readonly count: number }
  | { readonly kind: 'modified'; readonly jobId: number }
  | { readonly kind: 'hostControlled' }
  | { readonly kind: 'credentialApplied' }
  /**
   * A BatchFact: the result of each of its facts, dispatches first, in order. Never kept in a
   * session (a batch has no client), so not in RESULT_KINDS (the snapshot's ResultKind).
   */
  | { readonly kind: 'batch'; readonly results: readonly ApplyResult[] };

export const RESULT_KINDS: readonly Exclude<ApplyResult['kind'], 'batch'>[] = [
  'noop',
  'submitted',
  'rejected',
  'configApplied',
  'dispatched',
  'declined',
  'statusApplied',
  'ignored',
  'controlled',
  'hostRegistered',
  'cleaned',
  'modified',
  'hostControlled',
  'credentialApplied',
];
