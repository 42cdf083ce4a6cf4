// loadConfig's rules for xce.yaml: controller ids and addresses unique (an even count warned
// about), exactly one secret source, and the default application: a real profile, never an alias
// (without one, the built-in `default` when applications.yaml defines none of that name).

import type { ConfigFile } from './config-file.js';
import type { Parsed } from './config-parsed.js';
import {
  ACCOUNTING_RETENTION_MS_DEFAULT,
  ARRAY_SIZE_MAX_DEFAULT,
  type ClusterSection,
  DEFAULT_PROFILE_NAME,
  FINISHED_JOB_RETENTION_MS_DEFAULT,
  FINISHED_JOBS_MAX_DEFAULT,
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
  const defaultApplication = checkDefaultApplication(f, data, profiles);
  const finishedJobRetentionMs = positiveDuration(f, data.finished_job_retention, 'finished_job_retention');
  const accountingRetentionMs = positiveDuration(f, data.accounting_retention, 'accounting_retention');
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
    arraySizeMax: data.array_size_max ?? ARRAY_SIZE_MAX_DEFAULT,
  };
}

/**
 * A retention (`finished_job_retention`, `accounting_retention`) in ms: null when not set. Zero is
 * refused (a finished job would leave the state before anyone could read it); the schema has
 * already refused a negative or garbled one, naming the field.
 */
function positiveDuration(f: ConfigFile, value: string | number | undefined, field: string): number | null {
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
    f.error([field], `${JSON.stringify(value)} keeps nothing; give a duration longer than 0 (e.g. 1h, 30m, 90d)`);
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
