// The contract between the application-profile model (config, resreq, merge, hash) and its
// consumers (apply, scheduler, dispatch record, API). Values here are already validated and
// normalised: units converted, env sorted by name, empty strings mapped to null.

export type LaunchType = 'serial' | 'openmpi' | 'mpich';
/** Only `direct` exists in this version; `job-sandbox-execution` adds `sandbox`. */
export type ExecMode = 'direct';
/** Where a value of the effective (merged) job came from: shown in job details. */
export type Origin = 'profile' | 'job';

/** Limits are maximums in a profile and requests in a job. Canonical units; absent = not set. */
export interface Limits {
  readonly runtime_s?: number;
  readonly memory_bytes?: number;
  readonly cpu_s?: number;
  readonly tasks?: number;
}

export interface EnvVar {
  readonly name: string;
  readonly value: string;
}

// ---- resource requirements (LSF-style: select / rusage / span / same / order) ----

export type CmpOp = '>' | '>=' | '<' | '<=' | '==' | '!=';

export type SelectExpr =
  | { readonly kind: 'bool'; readonly name: string } // `ib`: a boolean resource the host must have
  | { readonly kind: 'cmp'; readonly name: string; readonly op: CmpOp; readonly value: number | string }
  | { readonly kind: 'not'; readonly expr: SelectExpr }
  | { readonly kind: 'and'; readonly args: readonly SelectExpr[] }
  | { readonly kind: 'or'; readonly args: readonly SelectExpr[] };

export interface RusageItem {
  readonly name: string;
  readonly value: number;
  /** Optional duration of the reservation (LSF `rusage[mem=100:duration=10]`), in seconds. */
  readonly duration_s?: number;
}

export interface Span {
  /** Tasks per host (`span[ptile=N]`). */
  readonly ptile?: number;
  /** Number of hosts (`span[hosts=1]`). */
  readonly hosts?: number;
}

export interface OrderKey {
  readonly name: string;
  readonly descending: boolean;
}

/** A simple (non-compound) resource requirement. Top-level `select` terms are ANDed. */
export interface ResReq {
  readonly kind: 'simple';
  readonly select: readonly SelectExpr[];
  readonly rusage: readonly RusageItem[];
  readonly span: Span | null;
  readonly same: readonly string[] | null;
  readonly order: readonly OrderKey[] | null;
}

/** `{...} + {...}` or `... || ...` between whole requirements: kept so the merge can refuse it. */
export interface CompoundResReq {
  readonly kind: 'compound';
  readonly parts: readonly ResReq[];
  readonly operator: '+' | '||';
}

export type ParsedResReq = ResReq | CompoundResReq;

// ---- the profile ----

export interface TaskRange {
  readonly min: number;
  readonly max: number;
}

export interface Profile {
  readonly name: string;
  readonly description: string | null;
  readonly aliases: readonly string[];
  readonly mode: ExecMode;
  /** null: not set by the profile; the job runs `serial`. */
  readonly launchType: LaunchType | null;
  /** null: the profile sets no resource requirement. Never compound. */
  readonly resreq: ResReq | null;
  readonly tasks: TaskRange | null;
  readonly limits: Limits;
  /** Sorted by name. */
  readonly env: readonly EnvVar[];
  readonly preExec: string | null;
  readonly postExec: string | null;
  readonly jobPrePostExec: 'allow' | 'forbid';
  /** The `service:` section (kind `service`); its type lives with the config schema. */
  readonly service: unknown | null;
}

// ---- the job's own values, as submitted (never the merged ones) ----

export interface JobOwnValues {
  readonly resreq: ParsedResReq | null;
  readonly tasks: number | null;
  /** Sorted by name. */
  readonly env: readonly EnvVar[];
  readonly limits: Limits;
  readonly preExec: string | null;
  readonly postExec: string | null;
}

// ---- the effective values (live merge of profile + job) ----

export interface WithOrigin<T> {
  readonly value: T;
  readonly origin: Origin;
}

export interface EffectiveResReq {
  readonly select: readonly WithOrigin<SelectExpr>[];
  readonly rusage: readonly WithOrigin<RusageItem>[];
  readonly span: WithOrigin<Span> | null;
  readonly same: WithOrigin<readonly string[]> | null;
  readonly order: WithOrigin<readonly OrderKey[]> | null;
  /**
   * Additive (issue 4): a job's compound / alternative requirement, which stands as the job wrote it
   * when its profile sets no resource requirement terms (the merge refuses it otherwise). When set,
   * the fields above are empty.
   */
  readonly compound?: CompoundResReq;
}

export interface EffectiveValues {
  /** The resolved profile name (an alias's target). */
  readonly profile: string;
  readonly mode: ExecMode;
  readonly launchType: LaunchType;
  readonly resreq: EffectiveResReq;
  readonly tasks: number;
  readonly env: readonly WithOrigin<EnvVar>[];
  readonly limits: { readonly [K in keyof Limits]?: WithOrigin<number> };
  readonly profilePreExec: string | null;
  readonly profilePostExec: string | null;
  readonly jobPreExec: string | null;
  readonly jobPostExec: string | null;
}
