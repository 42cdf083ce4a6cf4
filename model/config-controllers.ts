// loadConfig's rules for xce.yaml: controller ids and addresses unique (an even count warned
// about), exactly one secret source, and the default application: a real profile, never an alias
// (without one, the built-in `default` when applications.yaml defines none of that name).

import type { ConfigFile } from './config-file.js';
import type { Parsed } from './config-parsed.js';
import {
  ACCOUNTING_RETENTION_MS_DEFAULT,
  API_AUTH_DEADLINE_MS_LIMIT,
  API_LIMITS_DEFAULT,
  type ApiLimitsConfig,
  ARRAY_SIZE_MAX_DEFAULT,
  type ClusterSection,
  DEFAULT_PROFILE_NAME,
  FINISHED_JOB_RETENTION_MS_DEFAULT,
  FINISHED_JOBS_MAX_DEFAULT,
  REFRESH_TOKEN_LIFETIME_MS_DEFAULT,
  TOKEN_LIFETIME_MS_DEFAULT,
  TOKEN_LIFETIME_MS_MAX,
  WORKER_REGISTRATIONS_DEFAULT,
} from './config-types.js';
import type { ProfilesResult } from './config-profiles.js';
import { builtinDefaultProfile } from './profile-config.js';
import { parseDuration, UnitSyntaxError } from './units.js';

type XceData = NonNullable<NonNullable<Parsed['xce.yaml']>['data']>;

export function checkXce(parsed: Parsed, profiles: ProfilesResult | null): ClusterSection | null {
  const p = parsed['xce.yaml'];
  if (p === undefined || p.data === null) return null;
  const { f, data } = p;
  const ids = new Map<number, number>();
  const addrs = new Map<string, number>();
  data.controllers.forEach((c, i) => {
    if (c === null) return;
    if (ids.has(c.id))
      f.error(['controllers', i, 'id'], `controller id ${c.id} is used twice; Raft member ids must be unique`);
    else ids.set(c.id, i);
    const addr = `${c.host}:${c.port}`;
    if (addrs.has(addr)) f.error(['controllers', i, 'port'], `controller address ${addr} is used twice`);
    else addrs.set(addr, i);
  });
  if (data.controllers.length % 2 === 0) {
    f.warning(
      ['controllers'],
      `${data.controllers.length} controllers tolerate no more failures than ${data.controllers.length - 1}; use an odd number (3 or 5)`,
    );
  }
  if ((data.secret === undefined) === (data.secret_file === undefined)) {
    f.error(['secret_file'], `set exactly one of secret_file (production) or secret (development only)`);
  }
  if (data.tls !== undefined && data.insecure_dev === true)
    f.error(['insecure_dev'], 'set either tls (cert_file, key_file, ca_file) or insecure_dev: true, not both');
  const defaultApplication = checkDefaultApplication(f, data, profiles);
  const finishedJobRetentionMs = positiveDuration(f, data.finished_job_retention, 'finished_job_retention');
  const accountingRetentionMs = positiveDuration(f, data.accounting_retention, 'accounting_retention');
  const apiLimits = checkApiLimits(f, data.api_limits);
  const lifetimes = tokenLifetimes(f, data);
  if (!f.ok) return null;
  return {
    name: data.name,
    controllers: data.controllers.flatMap((c) => (c === null ? [] : [{ id: c.id, host: c.host, port: c.port }])),
    secret:
      data.secret_file !== undefined
        ? { kind: 'file', path: data.secret_file }
        : { kind: 'inline', value: data.secret as string },
    defaultApplication,
    finishedJobRetentionMs: finishedJobRetentionMs ?? FINISHED_JOB_RETENTION_MS_DEFAULT,
    finishedJobsMax: data.finished_jobs_max ?? FINISHED_JOBS_MAX_DEFAULT,
    accountingRetentionMs: accountingRetentionMs ?? ACCOUNTING_RETENTION_MS_DEFAULT,
    transport:
      data.tls !== undefined
        ? { kind: 'tls', certFile: data.tls.cert_file, keyFile: data.tls.key_file, caFile: data.tls.ca_file }
        : data.insecure_dev === true
          ? { kind: 'insecure' }
          : { kind: 'unset' },
    arraySizeMax: data.array_size_max ?? ARRAY_SIZE_MAX_DEFAULT,
    apiLimits,
    workerRegistrations: {
      perTurn: data.worker_registrations?.per_turn ?? WORKER_REGISTRATIONS_DEFAULT.perTurn,
      queuedMax: data.worker_registrations?.queued_max ?? WORKER_REGISTRATIONS_DEFAULT.queuedMax,
    },
    ...lifetimes,
  };
}

/** `api_limits` with the defaults filled in; an auth deadline of 0 or above the bound is refused, naming it. */
function checkApiLimits(f: ConfigFile, l: XceData['api_limits']): ApiLimitsConfig {
  const d = API_LIMITS_DEFAULT;
  if (l === undefined) return d;
  let authDeadlineMs = d.authDeadlineMs;
  const v = l.auth_deadline;
  if (v !== undefined) {
    const field = 'api_limits.auth_deadline';
    const bad = (why: string): void =>
      f.error(['api_limits', 'auth_deadline'], `${field}: ${JSON.stringify(v)} ${why}`);
    let s: number | null = null;
    try {
      s = typeof v === 'number' ? v : parseDuration(v);
    } catch (e) {
      if (!(e instanceof UnitSyntaxError)) throw e;
      f.error(['api_limits', 'auth_deadline'], `${field}: ${e.message}`);
    }
    if (s !== null && s <= 0) bad('closes every connection at once; give at least 1s (e.g. 10s)');
    else if (s !== null && s * 1000 > API_AUTH_DEADLINE_MS_LIMIT)
      bad(`is longer than ${API_AUTH_DEADLINE_MS_LIMIT / 1000}s; a client logs in within seconds`);
    else if (s !== null) authDeadlineMs = s * 1000;
  }
  return {
    connectionsPerAddress: l.connections_per_address ?? d.connectionsPerAddress,
    sessionsPerUser: l.sessions_per_user ?? d.sessionsPerUser,
    requestsPerUser: l.requests_per_user ?? d.requestsPerUser,
    requestsPerAddress: l.requests_per_address ?? d.requestsPerAddress,
    framesPerConnection: l.frames_per_connection ?? d.framesPerConnection,
    authDeadlineMs,
  };
}

/**
 * `token_lifetime` and `refresh_token_lifetime` in ms (defaults 1h and 7d): each longer than 0 and
 * at most 30d, and a refresh token does not die before the access tokens it renews.
 */
function tokenLifetimes(f: ConfigFile, data: XceData): { tokenLifetimeMs: number; refreshTokenLifetimeMs: number } {
  const one = (value: string | number | undefined, field: string, fallback: number): number => {
    const ms = positiveDuration(f, value, field, 'would issue tokens already expired') ?? fallback;
    if (ms > TOKEN_LIFETIME_MS_MAX)
      f.error([field], `${field}: ${JSON.stringify(value)} is longer than the longest token lifetime, 30d`);
    return ms;
  };
  const tokenLifetimeMs = one(data.token_lifetime, 'token_lifetime', TOKEN_LIFETIME_MS_DEFAULT);
  const refreshTokenLifetimeMs = one(
    data.refresh_token_lifetime,
    'refresh_token_lifetime',
    Math.max(REFRESH_TOKEN_LIFETIME_MS_DEFAULT, tokenLifetimeMs),
  );
  if (refreshTokenLifetimeMs < tokenLifetimeMs)
    f.error(
      ['refresh_token_lifetime'],
      `refresh_token_lifetime (${String(data.refresh_token_lifetime)}) is shorter than token_lifetime (${String(data.token_lifetime)}): a refresh token must outlive the tokens it renews`,
    );
  return { tokenLifetimeMs, refreshTokenLifetimeMs };
}

/**
 * A retention (`finished_job_retention`, `accounting_retention`) in ms: null when not set. Zero is
 * refused (a finished job would leave the state before anyone could read it); the schema has
 * already refused a negative or garbled one, naming the field.
 */
function positiveDuration(
  f: ConfigFile,
  value: string | number | undefined,
  field: string,
  zeroMeans = 'keeps nothing',
): number | null {
  if (value === undefined) return null;
  let s: number;
  try {
    s = typeof value === 'number' ? value : parseDuration(value);
  } catch (e) {
    if (!(e instanceof UnitSyntaxError)) throw e;
    f.error([field], `${field}: ${e.message}`);
    return null;
  }
  if (s <= 0) {
    f.error(
      [field],
      `${field}: ${JSON.stringify(value)} ${zeroMeans}; give a duration longer than 0 (e.g. 1h, 30m, 90d)`,
    );
    return null;
  }
  return s * 1000;
}

/** The default application xce.yaml names (or the built-in one), checked against the profiles. */
function checkDefaultApplication(f: ConfigFile, data: XceData, profiles: ProfilesResult | null): string {
  let defaultApplication = DEFAULT_PROFILE_NAME;
  if (data.default_application !== undefined) {
    const name = data.default_application;
    defaultApplication = name;
    if (profiles !== null) {
      const target = profiles.aliases.get(name);
      if (target !== undefined) {
        f.error(
          ['default_application'],
          `default_application names ${name}, which is an alias of profile ${target}; name the profile itself (${target})`,
        );
      } else if (!profiles.names.has(name)) {
        f.error(
          ['default_application'],
          profiles.fromFile
            ? `default_application names profile ${name}, which is not defined in applications.yaml; every job submitted without --app would fail`
            : `default_application names profile ${name}, but there is no applications.yaml (only the built-in ${DEFAULT_PROFILE_NAME} profile exists)`,
        );
      }
    }
  } else if (profiles !== null && profiles.fromFile && !profiles.profiles.has(DEFAULT_PROFILE_NAME)) {
    if (profiles.aliases.has(DEFAULT_PROFILE_NAME)) {
      f.error(
        [],
        `xce.yaml sets no default_application, so jobs without --app use "${DEFAULT_PROFILE_NAME}", but applications.yaml makes "${DEFAULT_PROFILE_NAME}" an alias; set default_application`,
      );
    } else {
      // No default named: the built-in `default` (mode direct, no attributes) serves jobs without --app.
      profiles.profiles.set(DEFAULT_PROFILE_NAME, builtinDefaultProfile(DEFAULT_PROFILE_NAME));
    }
  }
  return defaultApplication;
}
