// The validated cluster configuration (what `loadConfig` returns and a ConfigFact carries): one
// section per configuration file, units converted, names resolved. Everything here is already
// checked; consumers never re-validate it.

import type { SitePreset } from './preset-types.js';
import type { Profile } from './profile-types.js';
import type { ResourceType } from './resreq.js';

/** Where a diagnostic points: the file, the entry (a named list item), the field, and the YAML position. */
export interface Diagnostic {
  readonly severity: 'error' | 'warning';
  /** The file's base name, e.g. `applications.yaml`. */
  readonly file: string;
  /** The entry's name (`openfoam`, `night`), or `[3]` for an unnamed list item. */
  readonly entry?: string;
  /** Dotted path inside the entry (`limits.runtime`, `env.XCE_X`) or inside the file for top-level keys. */
  readonly field?: string;
  /** 1-based line and column in the file, when the YAML gives them. */
  readonly line?: number;
  readonly column?: number;
  readonly message: string;
}

export type ConfigLoadResult =
  | { readonly ok: true; readonly config: ClusterConfig; readonly warnings: readonly Diagnostic[] }
  | { readonly ok: false; readonly errors: readonly Diagnostic[]; readonly warnings: readonly Diagnostic[] };

export interface ControllerAddress {
  /** Raft member id, stable for the life of the member. */
  readonly id: number;
  readonly host: string;
  readonly port: number;
}

/** The cluster secret (HMAC of peer frames, JWT signing): inline (dev only) or the path of a file holding it. */
export type SecretRef =
  { readonly kind: 'inline'; readonly value: string } | { readonly kind: 'file'; readonly path: string };

/**
 * How the controllers' port is served: TLS with these files (relative to the configuration
 * directory), plain ws only when xce.yaml says `insecure_dev: true`; `unset`: neither (xcectld
 * refuses to start so, naming both).
 */
export type TransportConfig =
  | { readonly kind: 'tls'; readonly certFile: string; readonly keyFile: string; readonly caFile: string }
  | { readonly kind: 'insecure' }
  | { readonly kind: 'unset' };

export interface ClusterSection {
  readonly name: string;
  readonly controllers: readonly ControllerAddress[];
  readonly secret: SecretRef;
  /** The profile a job gets without `--app`: a real profile name, never an alias (`default` when xce.yaml sets none). */
  readonly defaultApplication: string;
  /** A finished job leaves the state this long after it ended (`finished_job_retention`, default 1h). */
  readonly finishedJobRetentionMs: number;
  /** Most finished jobs the state keeps, oldest cleaned first (`finished_jobs_max`, default 200,000). */
  readonly finishedJobsMax: number;
  /** The accounting store drops records older than this (`accounting_retention`, default 90 days). */
  readonly accountingRetentionMs: number;
  readonly transport: TransportConfig;
  /** Most elements one job array may have (`array_size_max`, default 100,000); a larger array is refused at submit. */
  readonly arraySizeMax: number;
  /** Limits against abuse of the client API and the REST API (`api_limits`, every key optional). */
  readonly apiLimits: ApiLimitsConfig;
  /** The leader's bound on worker handshakes and registrations (`worker_registrations`, every key optional). */
  readonly workerRegistrations: WorkerRegistrationLimits;
  /** How long a user's access token lives (`token_lifetime`, default 1h); `xcecli` refreshes it. */
  readonly tokenLifetimeMs: number;
  /** How long a refresh token lives (`refresh_token_lifetime`, default 7d): then `xcecli login` again. */
  readonly refreshTokenLifetimeMs: number;
}

/** A token bucket: `rate` a second on average, up to `burst` at once. */
export interface RateConfig {
  readonly rate: number;
  readonly burst: number;
}

/** `api_limits` of xce.yaml, defaults filled in (API_LIMITS_DEFAULT). */
export interface ApiLimitsConfig {
  /** Connections one client address may hold open to /api and the REST API together. */
  readonly connectionsPerAddress: number;
  /** Authenticated /api connections one user may hold open (on one controller). */
  readonly sessionsPerUser: number;
  /** Requests of one user, per second and burst (/api and REST). */
  readonly requestsPerUser: RateConfig;
  /** Requests from one client address, per second and burst (/api and REST). */
  readonly requestsPerAddress: RateConfig;
  /** Frames one /api connection may send, per second and burst; past it the socket is not read for a while. */
  readonly framesPerConnection: RateConfig;
  /** An /api connection that has not logged in (or sent a valid token) by then is closed. */
  readonly authDeadlineMs: number;
}

/**
 * The defaults: a login node carries many users (512 connections, twice a user's request rate);
 * the cluster benchmark's 256 clients of one user fit in `sessions_per_user`; 20,000 requests a
 * second per user is above the most one user was measured to get served (12,667 submits/s); a
 * client library sends one frame per call, a pipelining program a few hundred a second, so 2,000
 * frames a second per connection slows only a flood; 10 s to log in is ample for a client.
 */
export const API_LIMITS_DEFAULT: ApiLimitsConfig = {
  connectionsPerAddress: 512,
  sessionsPerUser: 512,
  requestsPerUser: { rate: 20_000, burst: 40_000 },
  requestsPerAddress: { rate: 40_000, burst: 80_000 },
  framesPerConnection: { rate: 2_000, burst: 4_000 },
  authDeadlineMs: 10_000,
};
/** `worker_registrations` of xce.yaml, defaults filled in (WORKER_REGISTRATIONS_DEFAULT). */
export interface WorkerRegistrationLimits {
  /** Worker handshakes and `register` frames the leader handles per turn of its event loop. */
  readonly perTurn: number;
  /** Handshakes and registrations waiting in all; past it a worker is answered `busy` with a time to retry after. */
  readonly queuedMax: number;
}

/**
 * The defaults: a registration costs the leader about 0.5-1 ms of its event loop (handshake,
 * authentication, register), so 64 in a turn hold it for tens of milliseconds, far below its
 * 250-500 ms election timeout, with Raft's ticks and I/O in between; 512 waiting are served
 * within about half a second on an idle core, well before a worker gives up on its upgrade (3 s).
 */
export const WORKER_REGISTRATIONS_DEFAULT: WorkerRegistrationLimits = { perTurn: 64, queuedMax: 512 };
/** The largest `worker_registrations.per_turn` and `queued_max` (a bound on a typo, not a tuning). */
export const WORKER_REGISTRATIONS_LIMIT_MAX = 1_000_000;

/** The largest `api_limits.auth_deadline`: a client logs in within seconds; minutes would keep idle sockets. */
export const API_AUTH_DEADLINE_MS_LIMIT = 300_000;
/** The largest connection count in `api_limits` (a bound on a typo, not a tuning). */
export const CONNECTIONS_LIMIT_MAX = 1_000_000;
/** The largest rate or burst in `api_limits`. */
export const RATE_LIMIT_MAX = 10_000_000;

export const FINISHED_JOB_RETENTION_MS_DEFAULT = 60 * 60 * 1000;
export const FINISHED_JOBS_MAX_DEFAULT = 200_000;
/** The largest `finished_jobs_max`: with 2,000,000 active jobs the snapshot stays below 2 GiB. */
export const FINISHED_JOBS_MAX_LIMIT = 500_000;
export const ARRAY_SIZE_MAX_DEFAULT = 100_000;
/** The largest `array_size_max`: an element's index is below ARRAY_INDEX_SPAN (model/job-id.ts) and the state holds JOBS_MAX jobs. */
export const ARRAY_SIZE_MAX_LIMIT = 1_000_000;
export const ACCOUNTING_RETENTION_MS_DEFAULT = 90 * 24 * 60 * 60 * 1000;
export const TOKEN_LIFETIME_MS_DEFAULT = 60 * 60 * 1000;
export const REFRESH_TOKEN_LIFETIME_MS_DEFAULT = 7 * 24 * 60 * 60 * 1000;
/** The longest token of any kind (daemon/auth.ts TOKEN_TTL_S_MAX): 30 days. */
export const TOKEN_LIFETIME_MS_MAX = 30 * 24 * 60 * 60 * 1000;

export interface QueueConfig {
  readonly name: string;
  /** Larger is considered first. */
  readonly priority: number;
  readonly description: string | null;
  /** Deprecated (kept only so `config build` can warn): resource requirements belong in application profiles. */
  readonly deprecatedResReq: string | null;
  readonly deprecatedPreExec: string | null;
  readonly deprecatedPostExec: string | null;
}

export interface HostConfig {
  readonly name: string;
  readonly slots: number;
  readonly mem_bytes: number;
  /** Boolean host resources this host has (`ib`, `x86_64`), sorted. */
  readonly booleans: readonly string[];
  /** Numeric host resources (`gpu: 4`), sorted by name. */
  readonly numerics: ReadonlyArray<{ readonly name: string; readonly value: number }>;
  /** String host resources (`model: A100`), sorted by name. */
  readonly strings: ReadonlyArray<{ readonly name: string; readonly value: string }>;
}

export interface ResourceConfig {
  readonly name: string;
  readonly type: ResourceType;
  /** `host`: each host has its own; `cluster`: one shared pool (licenses), with a total. */
  readonly scope: 'host' | 'cluster';
  /** The shared pool's size (cluster scope only). */
  readonly total: number | null;
  readonly description: string | null;
}

export const PERMISSIONS = [
  'queue:submit',
  'app:use',
  'app:view',
  'job:view',
  'job:control',
  'cluster:view',
  'cluster:admin',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** The scope type each permission is granted on (`all`: not scoped to named instances). */
export const PERMISSION_SCOPE: Readonly<Record<Permission, 'queue' | 'app' | 'all'>> = {
  'queue:submit': 'queue',
  'app:use': 'app',
  'app:view': 'app',
  'job:view': 'all',
  'job:control': 'all',
  'cluster:view': 'all',
  'cluster:admin': 'all',
};

/** The one role that passes every check (the existing single bypass; the brief adds none). */
export const CLUSTER_ADMIN_ROLE = 'cluster_admin';
/** A scope value that matches every queue or profile. */
export const SCOPE_ALL = 'all';

export interface Grant {
  readonly permission: Permission;
  /** `all` when the permission is not scoped to named instances. */
  readonly scopeType: 'queue' | 'app' | 'all';
  /** Queue or profile names, or [`all`]. Empty for scopeType `all`. */
  readonly values: readonly string[];
}

export interface RoleConfig {
  readonly name: string;
  readonly description: string | null;
  readonly grants: readonly Grant[];
}

export interface RoleBinding {
  readonly role: string;
  readonly users: readonly string[];
  readonly groups: readonly string[];
}

export interface RbacConfig {
  readonly roles: ReadonlyMap<string, RoleConfig>;
  readonly bindings: readonly RoleBinding[];
}

export interface UserConfig {
  readonly name: string;
  readonly groups: readonly string[];
  /** `scrypt$N$salt-b64$key-b64` (daemon/auth.ts verifies it). */
  readonly passwordHash: string;
}

// ---- the profile's `service:` section (kind service): defined and validated now, run later ----

export type ProbeAction =
  | { readonly kind: 'command'; readonly command: string }
  | { readonly kind: 'tcp'; readonly port: string }
  | { readonly kind: 'http'; readonly port: string; readonly path: string };

export interface Probe {
  readonly action: ProbeAction;
  readonly period_s: number;
  readonly timeout_s: number;
  readonly initialDelay_s: number;
  /** Consecutive failures before the probe counts as failed. */
  readonly failureThreshold: number;
}

export interface ServicePort {
  readonly name: string;
  /** 0: the worker picks a free port and publishes it. */
  readonly port: number;
  readonly protocol: 'tcp' | 'udp';
}

export interface ServiceSpec {
  readonly restart: {
    readonly policy: 'always' | 'on-failure' | 'never';
    readonly backoffInitial_s: number;
    readonly backoffMax_s: number;
    /** Stop restarting after `attempts` restarts within `window_s`; null: never give up. */
    readonly giveUp: { readonly attempts: number; readonly window_s: number } | null;
  };
  readonly liveness: Probe | null;
  readonly readiness: Probe | null;
  /** Sorted by name. */
  readonly ports: readonly ServicePort[];
  /** Like the task range: the service picks its replica count within it. */
  readonly replicas: { readonly min: number; readonly max: number } | null;
  /** Spread replicas across distinct values of a host attribute (`hname`, `rack`): binds when set. */
  readonly spread: { readonly across: string; readonly maxSkew: number } | null;
  readonly rollout: { readonly maxUnavailable: number; readonly maxSurge: number } | null;
}

export const DEFAULT_PROFILE_NAME = 'default';

export interface ClusterConfig {
  readonly cluster: ClusterSection;
  /** By name; aliases are not keys here (see `aliases`). */
  readonly profiles: ReadonlyMap<string, Profile>;
  /** alias → target profile name (never another alias). */
  readonly aliases: ReadonlyMap<string, string>;
  readonly queues: ReadonlyMap<string, QueueConfig>;
  readonly hosts: ReadonlyMap<string, HostConfig>;
  readonly resources: ReadonlyMap<string, ResourceConfig>;
  readonly rbac: RbacConfig;
  readonly users: ReadonlyMap<string, UserConfig>;
  /**
   * Site presets (`presets/*.yaml`) by name: served read-only to clients, never part of a job
   * (config-presets.ts).
   */
  readonly presets: ReadonlyMap<string, SitePreset>;
}
