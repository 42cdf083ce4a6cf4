// What every client API operation answers (the `result` of an `ok` response), shared by the daemon
// (daemon/api/*.ts build these) and the client library (cli/client.ts returns them): one type per
// operation, gathered in OpResults. These are JSON shapes: what the server sends is what a client reads.

import type { EnvVar, ExecMode, LaunchType, Origin, TaskRange } from '../model/profile-types.js';
import type { Grant, RoleBinding } from '../model/config-types.js';
import type { JobValues } from '../model/preset-schema.js';
import type { NameCount } from '../statemachine/facts.js';
import type { JobDetails, ResReqTerm } from '../statemachine/queries.js';
import type { JobState } from '../statemachine/state.js';
import type { Op, OpArgs } from './protocol.js';

export type { JobDetails, ResReqTerm, ProfileView, DispatchRecordView } from '../statemachine/queries.js';

/** `login` and `token.issue`: a JWT for `user`, good for `expiresIn_s` seconds. */
export type LoginResult = { token: string; user: string; expiresIn_s: number };

/** `jobs.submit`: the new job (or, for a retry, the one its first try made), its profile as recorded, its queue. */
export type SubmitResult = {
  jobId: number;
  profile: string | null;
  queue: string | null;
  /** A job array's element count (its elements are `jobId[INDEX]`); absent for a plain job. */
  arraySize?: number;
};

/** `jobs.submit` with `dryRun`: what the job would run with (the live merge), nothing submitted. */
export type DryRunResult = {
  dryRun: true;
  /** The resolved profile name (an alias's target). */
  profile: string;
  /** `openfoam@3f2a9c`; null without a content hash. */
  profileLabel: string | null;
  /** The profile name the job would record. */
  recordedAs: string | null;
  mode: ExecMode;
  launchType: LaunchType;
  tasks: number;
  resreq: ResReqTerm[];
  env: Array<{ name: string; value: string; origin: Origin }>;
  /** `runtime`, `memory`, `cpu`, `tasks` with their values as users write them (`2h`, `4G`). */
  limits: Array<{ name: string; value: string; origin: Origin }>;
  profilePreExec: string | null;
  profilePostExec: string | null;
  jobPreExec: string | null;
  jobPostExec: string | null;
  queue: string;
};

/** One row of `jobs.list`. `app` and `pendReason` are left as recorded when the viewer may not see the profile. */
export type JobSummary = {
  id: number;
  state: JobState;
  user: string;
  queue: string;
  app: string | null;
  name: string | null;
  /** The command line, its words joined by spaces. */
  command: string;
  /** `host:tasks,host:tasks`; empty while pending. */
  hosts: string;
  submitTimeMs: number;
  pendReason: string | null;
  exitCode: number | null;
  reason: string | null;
  /** The job left the state: this row is from the accounting store (`jobs list --all`). */
  fromHistory?: true;
  /** How users write the id: `42`, or `42[7]` for an array element. */
  label?: string;
  /** A folded job array (`jobs list` without `--expand`): its size, `%N` limit and elements by state. */
  array?: { size: number; limit: number; counts: Record<JobState, number> };
};

/**
 * `jobs.list`: newest first, at most `limit` rows: the jobs in the state, then (with `all` or
 * `sinceMs`) those from history. `total`: the jobs of the state the filters match (on every page);
 * `next`: the `after` cursor of the next page (the last row's id), null when none is left.
 */
export type JobList = { jobs: JobSummary[]; total: number; next: number | null };

/** `jobs.show`: a job in the state, or one from the accounting store (`history` says when it left the state). */
export type JobShow = JobDetails & { history?: { cleanedAtIndex: number; cleanedTimeMs: number } };

/** One event of a job's history (`jobs history`), oldest first; `timeMs` null when not recorded. */
export type JobEvent = { timeMs: number | null; event: string; detail: string };

/** `jobs.history`: where the answer comes from (the state, or this controller's accounting store) and the events. */
export type JobHistory = { jobId: number; source: 'state' | 'history'; user: string; events: JobEvent[] };

/** `accounting.report`: one row per user, profile or queue (or one `(all)` row), sorted by key. */
export type AccountingReport = {
  sinceMs: number;
  untilMs: number;
  by: 'user' | 'app' | 'queue' | null;
  rows: Array<{ key: string; jobs: number; done: number; exit: number; cpuHours: number; wallHours: number }>;
};

/** `jobs.kill`, `jobs.requeue`, `jobs.restart`. */
export type ControlResult = {
  jobId: number;
  action: 'kill' | 'requeue' | 'restart' | 'hold' | 'release' | 'suspend' | 'resume';
};

/** `jobs.modify`: what changed (`--app python -> openfoam`, `-n 4 -> 8`), as the job's events keep it. */
export type ModifyResult = { jobId: number; changes: string; user: string; timeMs: number };

/** An application profile as `apps.list` lists it. */
export type AppSummary = {
  name: string;
  /** `name@hash`. */
  label: string;
  description: string | null;
  aliases: readonly string[];
  mode: ExecMode;
  launchType: LaunchType;
  isDefault: boolean;
  /** The user holds app:use on it. */
  usable: boolean;
};

/** `apps.list`: the profiles the user may view; the default is named only when it is one of them. */
export type AppList = { apps: AppSummary[]; defaultApplication: string | null };

/** `apps.show`: a profile's values. */
export type AppDetail = AppSummary & {
  /** The name asked for (an alias, or the profile's own). */
  recordedAs: string;
  hash: string;
  /** The profile's resource requirement terms, as written (`select[ib]`). */
  resreq: string[];
  tasks: TaskRange | null;
  limits: Array<{ name: string; max: string }>;
  env: readonly EnvVar[];
  preExec: string | null;
  postExec: string | null;
  jobPrePostExec: 'allow' | 'forbid';
};

/** A site preset as `presets.list` lists it: `label` is `name@hash` (its version). */
export type SitePresetSummary = {
  name: string;
  label: string;
  hash: string;
  description: string | null;
  /** The profile it is meant for (`app:`), null when none. */
  app: string | null;
  /** `presets/cfd-big.yaml`. */
  file: string;
};

/** `presets.list`: the site presets the user may see (those naming a profile the user may not view are left out). */
export type SitePresetList = { presets: SitePresetSummary[] };

/** `presets.get`: one site preset, its values and its file as the admin wrote it. */
export type SitePresetDetail = SitePresetSummary & { values: JobValues; text: string };

/** `config.upgrade`. */
export type ConfigUpgradeResult = {
  applied: true;
  /** Removed profiles and aliases still named by pending jobs, with counts. */
  inUse: readonly NameCount[];
  warnings: readonly string[];
};

/** A member of the cluster as `cluster.status` shows it; `match` and `lag` are known on the leader only. */
export type ClusterMember = {
  id: number;
  role: 'voter' | 'learner';
  address: string | null;
  leader: boolean;
  match: number | null;
  lag: number | null;
  connected: boolean;
};

/** One host of `hosts.list`: the capacity the scheduler uses and why it differs from hosts.yaml. */
export type HostRow = {
  name: string;
  /** `ok`: its worker is connected and heartbeating; null: asked of a follower (only the leader knows). */
  status: 'ok' | 'unavail' | null;
  /** The smaller of hosts.yaml's and the registered slots (statemachine/host-capacity.ts). */
  slots: number;
  /** Slots running jobs hold. */
  slotsUsed: number;
  mem_bytes: number;
  configured: { slots: number; mem_bytes: number };
  /** What its worker registered last; null: it never registered. */
  registered: { slots: number; mem_bytes: number; timeMs: number } | null;
  /** Each disagreement with hosts.yaml (`node01: registers 8 slots, hosts.yaml allows 64: using 8`). */
  mismatches: string[];
  /** Closed by an administrator (`xceadmin hosts close`): it gets no new jobs. null: open. */
  closed: { reason: string | null; user: string; timeMs: number } | null;
};

/** `hosts.close`, `hosts.open`. */
export type HostControlResult = { host: string; closed: boolean; reason: string | null };

/** One queue of `queues.list` (like bqueues). */
export type QueueRow = {
  name: string;
  priority: number;
  description: string | null;
  /** Jobs in the queue by state (the active ones and those still in the state). */
  pending: number;
  running: number;
  done: number;
  exited: number;
  /** Slots its running jobs hold. */
  slotsUsed: number;
  /** Whether the asking user may submit to it (queue:submit). */
  canSubmit: boolean;
  /** Queue-level limits: none in this version (limits belong to application profiles and jobs). */
  limits: null;
  /** Deprecated settings the queue still has, each with what to do instead. */
  deprecations: string[];
};

export type QueueList = { queues: QueueRow[] };

/** `jobs.peek`: a piece of a running job's stdout. `data` is base64 (bytes as the file holds them). */
export type PeekResult = {
  jobId: number;
  host: string;
  path: string;
  /** Where `data` starts in the file, and the file's size when read. */
  offset: number;
  size: number;
  data: string;
};

/** `hosts.list`: every host of hosts.yaml, by name. `statusFrom`: the node whose view `status` is (null: none known). */
export type HostList = { hosts: HostRow[]; statusFrom: number | null };

/** `cluster.status`: this node's view of Raft and the job counts per state. */
export type ClusterStatus = {
  node: number;
  /** 0 when there is no leader. */
  leader: number;
  leaderAddress: string | null;
  term: number;
  commit: number;
  applied: number;
  lastIndex: number;
  snapshotIndex: number;
  members: ClusterMember[];
  jobs: Record<string, number>;
  /** Every host whose worker registered other resources than hosts.yaml allows: one reason per disagreement. */
  hostMismatches: string[];
};

/** `cluster.transferLeader`: whether leadership moved within 3 s, and to whom. */
export type TransferResult = { transferred: boolean; to: number; leader: number };

/** `cluster.addMember`, `cluster.removeMember`: the membership after the change. */
export type MembershipResult = { voters: readonly number[]; learners: readonly number[] };

/** `roles.list`: rbac.yaml's roles and bindings in force. */
export type RoleList = {
  roles: Array<{ name: string; description: string | null; grants: readonly Grant[] }>;
  bindings: readonly RoleBinding[];
};

/** `roles.set`, `roles.delete`. */
export type RoleChangeResult = { role: string; action: 'created' | 'replaced' | 'deleted' };

/** The result of each operation. */
export type OpResults = {
  login: LoginResult;
  'jobs.submit': SubmitResult | DryRunResult;
  'jobs.list': JobList;
  'jobs.show': JobShow;
  'jobs.history': JobHistory;
  'accounting.report': AccountingReport;
  'jobs.kill': ControlResult;
  'jobs.requeue': ControlResult;
  'jobs.restart': ControlResult;
  'jobs.hold': ControlResult;
  'jobs.release': ControlResult;
  'jobs.suspend': ControlResult;
  'jobs.resume': ControlResult;
  'jobs.modify': ModifyResult;
  'apps.list': AppList;
  'apps.show': AppDetail;
  'presets.list': SitePresetList;
  'presets.get': SitePresetDetail;
  'config.upgrade': ConfigUpgradeResult;
  'hosts.list': HostList;
  'hosts.close': HostControlResult;
  'hosts.open': HostControlResult;
  'queues.list': QueueList;
  'queues.show': QueueRow;
  'jobs.peek': PeekResult;
  'cluster.status': ClusterStatus;
  'cluster.transferLeader': TransferResult;
  'cluster.addMember': MembershipResult;
  'cluster.removeMember': MembershipResult;
  'token.issue': LoginResult;
  'roles.list': RoleList;
  'roles.set': RoleChangeResult;
  'roles.delete': RoleChangeResult;
};

export type OpResult<O extends Op> = OpResults[O];

/** Every operation: its arguments (the zod schema's type, api/protocol.ts) and its result. */
export type Operations = { [O in Op]: { args: OpArgs<O>; result: OpResult<O> } };

/**
 * What `op` answers to `args`, as precisely as the arguments tell: `jobs.submit` answers a
 * SubmitResult, with `dryRun: true` a DryRunResult (either, when `dryRun` is only known to be a
 * boolean); every other operation its OpResult.
 */
export type CallResult<O extends Op, A> = O extends 'jobs.submit' ? SubmitAnswer<A> : OpResult<O>;

type SubmitAnswer<A> = A extends unknown
  ? 'dryRun' extends keyof A
    ? A extends { dryRun: true }
      ? DryRunResult
      : A extends { dryRun: false }
        ? SubmitResult
        : SubmitResult | DryRunResult
    : SubmitResult
  : never;

// Every operation has its result type, and no other key is listed (a compile-time check).
type Exact<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
const _allOps: Exact<keyof OpResults, Op> = true;
void _allOps;
