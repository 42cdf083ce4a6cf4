// The additive rule: a job may add to its application profile's values, never change or remove
// them (spec/application-profile-brief.md, "Essentials and the additive rule"). One function serves
// submit validation, the scheduler's live re-merge of every pending job after a profile change, and
// `--dry-run`. It is on the scheduler's hot path, so the accepting path builds no strings: messages
// are built only when a job is refused.
//
// | profile attribute          | the job may                                                    |
// |----------------------------|----------------------------------------------------------------|
// | select terms               | add terms (ANDed; the profile's come first)                    |
// | rusage                     | add other resources; not change the profile's                  |
// | span / same / order        | set them when the profile sets none (restating the same value is not a change) |
// | task range                 | choose within it; no `-n` means `min`                          |
// | env                        | add others; not redefine the profile's; never XCE_*            |
// | launch type, mode          | nothing (fixed)                                                |
// | limits                     | ask for less, never more                                       |
// | pre/post-exec              | add its own inner layer when job_pre_post_exec is allow        |

import type {
  EffectiveResReq,
  EffectiveValues,
  EnvVar,
  JobOwnValues,
  Limits,
  OrderKey,
  Profile,
  ResReq,
  RusageItem,
  SelectExpr,
  Span,
  WithOrigin,
} from './profile-types.js';
import {
  formatOrder,
  formatResReq,
  formatRusageItem,
  formatSame,
  formatSimpleResReq,
  formatSpan,
  isEmptyResReq,
} from './resreq.js';
import { formatDuration, formatSize } from './units.js';

/** Environment variables with this prefix are set by XCE itself; neither a job nor a profile may set them. */
export const RESERVED_ENV_PREFIX = 'XCE_';

export type AdditiveRuleField =
  | 'resreq'
  | 'select'
  | 'rusage'
  | 'span'
  | 'same'
  | 'order'
  | 'tasks'
  | 'env'
  | 'limits.runtime'
  | 'limits.memory'
  | 'limits.cpu'
  | 'limits.tasks'
  | 'pre_exec'
  | 'post_exec'
  | 'service'
  | 'service.replicas'
  | 'service.spread'
  | 'service.rollout';

/** A job refused by its profile: names the profile, the field and the profile value as an admin wrote it. */
export class AdditiveRuleError extends Error {
  override readonly name = 'AdditiveRuleError';
  constructor(
    /** The resolved profile name. */
    readonly profile: string,
    readonly field: AdditiveRuleField,
    /** The profile's value as written, e.g. `rusage[license_foam=1]`, `24h`; null when the profile sets none. */
    readonly profileValue: string | null,
    /** The job's offending value as written, e.g. `rusage[license_foam=2]`. */
    readonly jobValue: string,
    message: string,
  ) {
    // A refusal is an expected answer, not a fault: the scheduler may refuse every pending job of a
    // tightened profile in one pass, so skip the stack trace (most of the cost of an Error).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
  }
}

export type MergeResult =
  | { readonly ok: true; readonly effective: EffectiveValues }
  | { readonly ok: false; readonly error: AdditiveRuleError };

const NONE: readonly never[] = Object.freeze([]);

const LIMIT_KEYS = ['runtime_s', 'memory_bytes', 'cpu_s', 'tasks'] as const;
type LimitKey = (typeof LIMIT_KEYS)[number];
const LIMIT_FIELD: Record<LimitKey, AdditiveRuleField> = {
  runtime_s: 'limits.runtime',
  memory_bytes: 'limits.memory',
  cpu_s: 'limits.cpu',
  tasks: 'limits.tasks',
};

/** `24h`, `128G`, `4096`: a limit as an admin writes it. */
export function formatLimit(key: LimitKey, value: number): string {
  switch (key) {
    case 'runtime_s':
    case 'cpu_s':
      return formatDuration(value);
    case 'memory_bytes':
      return formatSize(value);
    case 'tasks':
      return String(value);
  }
}

/**
 * The profile's own values wrapped with their origin, built once per Profile object and shared by
 * every merge with it (the wrappers are immutable): the scheduler re-merges many jobs with one profile.
 */
interface ProfileWrapped {
  readonly select: readonly WithOrigin<SelectExpr>[];
  readonly rusage: readonly WithOrigin<RusageItem>[];
  readonly env: readonly WithOrigin<EnvVar>[];
}
const wrappedCache = new WeakMap<Profile, ProfileWrapped>();

function wrapped(profile: Profile): ProfileWrapped {
  let w = wrappedCache.get(profile);
  if (w === undefined) {
    const fromProfile = <T>(value: T): WithOrigin<T> => Object.freeze({ value, origin: 'profile' as const });
    w = {
      select: (profile.resreq?.select ?? NONE).map(fromProfile),
      rusage: (profile.resreq?.rusage ?? NONE).map(fromProfile),
      env: profile.env.map(fromProfile),
    };
    wrappedCache.set(profile, w);
  }
  return w;
}

function reject(
  profile: Profile,
  field: AdditiveRuleField,
  profileValue: string | null,
  jobValue: string,
  message: string,
): MergeResult {
  return { ok: false, error: new AdditiveRuleError(profile.name, field, profileValue, jobValue, message) };
}

/**
 * Merges a job's own values into its (resolved) profile. Never throws for a job's values; a job the
 * profile refuses comes back as `{ ok: false, error }` naming the profile value it would change.
 */
export function merge(profile: Profile, job: JobOwnValues): MergeResult {
  const w = wrapped(profile);
  // -- resource requirement --
  const p = profile.resreq;
  let resreq: EffectiveResReq;
  const jr = job.resreq;
  if (jr !== null && jr.kind === 'compound') {
    if (p !== null && !isEmptyResReq(p)) {
      const pv = formatSimpleResReq(p);
      return reject(
        profile,
        'resreq',
        pv,
        formatResReq(jr),
        `job sets a compound resource requirement (${formatResReq(jr)}) but application profile ${profile.name} requires ${pv}; ` +
          `compound and alternative ("${jr.operator}") requirements are not supported under a profile that sets resource requirement terms`,
      );
    }
    resreq = { select: NONE, rusage: NONE, span: null, same: null, order: null, compound: jr };
  } else {
    const r = mergeResReq(profile, p, jr, w);
    if (!isEffective(r)) return r;
    resreq = r;
  }

  // -- task count --
  let tasks: number;
  const range = profile.tasks;
  if (job.tasks === null) {
    tasks = range !== null ? range.min : 1;
  } else {
    tasks = job.tasks;
    if (!Number.isInteger(tasks) || tasks < 1) {
      return reject(
        profile,
        'tasks',
        range === null ? null : `${range.min}-${range.max}`,
        String(tasks),
        `job asks for ${tasks} tasks: a task count is a whole number of at least 1`,
      );
    }
    if (range !== null && (tasks < range.min || tasks > range.max)) {
      return reject(
        profile,
        'tasks',
        `${range.min}-${range.max}`,
        String(tasks),
        `job asks for ${tasks} tasks but application profile ${profile.name} requires between ${range.min} and ${range.max} tasks (tasks: {min: ${range.min}, max: ${range.max}})`,
      );
    }
  }

  // -- env: both lists are sorted by name, so one linear merge finds additions and conflicts --
  const env = mergeEnv(profile, job.env, w.env);
  if (!Array.isArray(env)) return env as MergeResult;

  // -- limits: maximums in the profile, requests in the job --
  const limits: { -readonly [K in keyof Limits]?: WithOrigin<number> } = {};
  const pl = profile.limits;
  const jl = job.limits;
  for (const key of LIMIT_KEYS) {
    const pv = pl[key];
    const jv = jl[key];
    if (jv !== undefined) {
      if (pv !== undefined && jv > pv) {
        const field = LIMIT_FIELD[key];
        const pText = formatLimit(key, pv);
        const jText = formatLimit(key, jv);
        return reject(
          profile,
          field,
          pText,
          jText,
          `job asks for ${field} ${jText} but application profile ${profile.name} allows at most ${pText}; a job may only ask for less`,
        );
      }
      limits[key] = { value: jv, origin: 'job' };
    } else if (pv !== undefined) {
      limits[key] = { value: pv, origin: 'profile' };
    }
  }

  // -- the job's own (inner) pre/post-exec --
  if (profile.jobPrePostExec === 'forbid') {
    if (job.preExec !== null) return forbidExec(profile, 'pre_exec', job.preExec);
    if (job.postExec !== null) return forbidExec(profile, 'post_exec', job.postExec);
  }

  const effective: EffectiveValues = {
    profile: profile.name,
    mode: profile.mode,
    launchType: profile.launchType ?? 'serial',
    resreq,
    tasks,
    env,
    limits,
    profilePreExec: profile.preExec,
    profilePostExec: profile.postExec,
    jobPreExec: job.preExec,
    jobPostExec: job.postExec,
  };
  return { ok: true, effective };
}

function forbidExec(profile: Profile, field: 'pre_exec' | 'post_exec', command: string): MergeResult {
  const what = field === 'pre_exec' ? 'pre-exec' : 'post-exec';
  return reject(
    profile,
    field,
    'job_pre_post_exec: forbid',
    command,
    `job sets its own ${what} (${command}) but application profile ${profile.name} forbids a job's own pre/post-exec (job_pre_post_exec: forbid)`,
  );
}

function isEffective(r: EffectiveResReq | MergeResult): r is EffectiveResReq {
  return (r as MergeResult).ok === undefined;
}

function mergeResReq(
  profile: Profile,
  p: ResReq | null,
  j: ResReq | null,
  w: ProfileWrapped,
): EffectiveResReq | MergeResult {
  // select: the profile's terms first, then the job's; each is ANDed as a whole.
  const pSel = p === null ? NONE : p.select;
  const jSel = j === null ? NONE : j.select;
  const select: WithOrigin<SelectExpr>[] = new Array(pSel.length + jSel.length);
  let n = 0;
  for (const t of w.select) select[n++] = t;
  for (const t of jSel) select[n++] = { value: t, origin: 'job' };

  // rusage: the job may reserve other resources, and may restate the profile's, not change them.
  const pRu = p === null ? NONE : p.rusage;
  const jRu = j === null ? NONE : j.rusage;
  const rusage: WithOrigin<RusageItem>[] = [];
  for (const t of w.rusage) rusage.push(t);
  for (const t of jRu) {
    let clash: RusageItem | undefined;
    for (const q of pRu) {
      if (q.name === t.name) {
        clash = q;
        break;
      }
    }
    if (clash === undefined) rusage.push({ value: t, origin: 'job' });
    else if (clash.value !== t.value || clash.duration_s !== t.duration_s) {
      const pv = `rusage[${formatRusageItem(clash)}]`;
      const jv = `rusage[${formatRusageItem(t)}]`;
      return reject(profile, 'rusage', pv, jv, `job sets ${jv} but application profile ${profile.name} requires ${pv}`);
    }
  }

  const span = pick<Span>(profile, 'span', p?.span ?? null, j?.span ?? null, spanEqual, formatSpan);
  if (span !== null && !isWithOrigin(span)) return span;
  const same = pick<readonly string[]>(profile, 'same', p?.same ?? null, j?.same ?? null, sameEqual, formatSame);
  if (same !== null && !isWithOrigin(same)) return same;
  const order = pick<readonly OrderKey[]>(
    profile,
    'order',
    p?.order ?? null,
    j?.order ?? null,
    orderEqual,
    formatOrder,
  );
  if (order !== null && !isWithOrigin(order)) return order;
  return { select, rusage, span, same, order };
}

function isWithOrigin<T>(x: WithOrigin<T> | MergeResult): x is WithOrigin<T> {
  return (x as WithOrigin<T>).origin !== undefined;
}

/** span / same / order: the profile's binds when set; the job's stands only when the profile sets none. */
function pick<T>(
  profile: Profile,
  field: 'span' | 'same' | 'order',
  pv: T | null,
  jv: T | null,
  equal: (a: T, b: T) => boolean,
  format: (v: T) => string,
): WithOrigin<T> | MergeResult | null {
  if (pv === null) return jv === null ? null : { value: jv, origin: 'job' };
  if (jv === null || equal(pv, jv)) return { value: pv, origin: 'profile' };
  const pText = format(pv);
  const jText = format(jv);
  return reject(
    profile,
    field,
    pText,
    jText,
    `job sets ${jText} but application profile ${profile.name} requires ${pText}; a job may set ${field}[...] only when its profile sets none`,
  );
}

function spanEqual(a: Span, b: Span): boolean {
  return a.ptile === b.ptile && a.hosts === b.hosts;
}

function sameEqual(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function orderEqual(a: readonly OrderKey[], b: readonly OrderKey[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as OrderKey;
    const y = b[i] as OrderKey;
    if (x.name !== y.name || x.descending !== y.descending) return false;
  }
  return true;
}

/** The name breaks the reservation of XCE_* (checked for jobs here and for profiles at config load). */
export function isReservedEnvName(name: string): boolean {
  return name.startsWith(RESERVED_ENV_PREFIX);
}

function mergeEnv(
  profile: Profile,
  jobEnv: readonly EnvVar[],
  wrappedEnv: readonly WithOrigin<EnvVar>[],
): WithOrigin<EnvVar>[] | MergeResult {
  const pe = profile.env;
  const out: WithOrigin<EnvVar>[] = new Array(pe.length + jobEnv.length);
  let n = 0;
  let i = 0;
  let k = 0;
  while (i < pe.length || k < jobEnv.length) {
    const a = pe[i];
    const b = jobEnv[k];
    if (b !== undefined && isReservedEnvName(b.name)) {
      return reject(
        profile,
        'env',
        null,
        `${b.name}=${b.value}`,
        `job sets environment variable ${b.name}, but the ${RESERVED_ENV_PREFIX} prefix is reserved for variables XCE sets itself; rename it`,
      );
    }
    if (b === undefined || (a !== undefined && a.name < b.name)) {
      out[n++] = wrappedEnv[i] as WithOrigin<EnvVar>;
      i++;
    } else if (a === undefined || b.name < a.name) {
      out[n++] = { value: b, origin: 'job' };
      k++;
    } else {
      if (a.value !== b.value) {
        const pv = `${a.name}=${a.value}`;
        const jv = `${b.name}=${b.value}`;
        return reject(
          profile,
          'env',
          pv,
          jv,
          `job sets env ${jv} but application profile ${profile.name} requires ${pv}; a job may add variables, not redefine the profile's`,
        );
      }
      out[n++] = wrappedEnv[i] as WithOrigin<EnvVar>;
      i++;
      k++;
    }
  }
  out.length = n;
  return out;
}
