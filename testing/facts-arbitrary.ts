// fast-check generators of every replicated fact (schema/facts.capnp: every union member, every
// field) and of whole controller states (the snapshot's content), at the extremes the schema allows
// (scalars and texts: scalar-arbitrary.ts), empty and absent lists, optional fields absent and
// present. Values are what the codec's decoder builds (plain objects, optional keys absent rather
// than undefined), so a round trip compares with deepStrictEqual. Test-only (imported by *.test.ts).

import fc from 'fast-check';
import type {
  CompoundResReq,
  EffectiveResReq,
  EnvVar,
  Limits,
  OrderKey,
  Origin,
  ResReq,
  RusageItem,
  SelectExpr,
  Span,
  WithOrigin,
} from '../model/profile-types.js';
import type { DispatchRecord, EffectiveLimits, HostTasks } from '../statemachine/dispatch-record.js';
import type { RegisteredHost } from '../statemachine/host-capacity.js';
import type { ApplyResult, ConfigFile, JobSpec, JobStatus } from '../statemachine/facts.js';
import type { Session } from '../statemachine/sessions.js';
import { isRunning, JOB_STATES, type Job, type JobEvent } from '../statemachine/state.js';
import { arbDependency } from './dependency-arbitrary.js';
import { arbEnvVars, arbLimits as arbProfileLimits } from './profile-arbitrary.js';
import {
  arbCompoundResReq,
  arbOrder,
  arbRusage,
  arbSame,
  arbSelectExpr as arbNormalSelectExpr,
  arbSimpleResReq,
  arbSpan as arbNormalSpan,
} from './resreq-arbitrary.js';
import {
  arbF64,
  arbI32,
  arbI64,
  arbOptText,
  arbPosU32,
  arbPosU64,
  arbText,
  arbU32,
  arbU64,
  U32_MAX,
} from './scalar-arbitrary.js';

export { arbDependency };
export { arbF64, arbI32, arbI64, arbOptText, arbPosU32, arbPosU64, arbText, arbU32, arbU64, U32_MAX };

const PLAIN = { noNullPrototype: true } as const;

/** fc.record without null-prototype objects (the codec builds plain objects; deepStrictEqual compares prototypes). */
export function rec<R extends Record<string, fc.Arbitrary<unknown>>>(
  model: R,
): fc.Arbitrary<{ [K in keyof R]: R[K] extends fc.Arbitrary<infer T> ? T : never }> {
  // fc.record's typing of a generic model loses the value types; the mapped type above restores them.
  return fc.record(model, PLAIN) as unknown as fc.Arbitrary<{
    [K in keyof R]: R[K] extends fc.Arbitrary<infer T> ? T : never;
  }>;
}

/**
 * A record with one generator per field of T, every field required: a field added to T (Job,
 * JobSpec, DispatchRecord) does not compile here until it has a generator.
 */
function fields<T>(model: { [K in keyof T]-?: fc.Arbitrary<T[K]> }): fc.Arbitrary<T> {
  // fc.record's typing of a generic model loses the value types; the model's type above keeps them.
  return fc.record(model, PLAIN) as unknown as fc.Arbitrary<T>;
}

const arbOrigin = fc.constantFrom<Origin>('job', 'profile');

// ---- resource requirements (normal form from resreq-arbitrary.ts, and any value the schema holds) ----

function withOrigin<T>(a: fc.Arbitrary<T>): fc.Arbitrary<WithOrigin<T>> {
  return rec({ value: a, origin: arbOrigin });
}

/** Any select expression the schema holds: any names and values, empty `and` / `or` included. */
const arbWildSelectExpr: fc.Arbitrary<SelectExpr> = fc.letrec<{ e: SelectExpr }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small' },
    rec({ kind: fc.constant('bool' as const), name: arbText }),
    rec({
      kind: fc.constant('cmp' as const),
      name: arbText,
      op: fc.constantFrom('>', '>=', '<', '<=', '==', '!=' as const),
      value: fc.oneof(arbF64, arbText),
    }),
    rec({ kind: fc.constant('not' as const), expr: tie('e') }),
    rec({ kind: fc.constantFrom('and' as const, 'or' as const), args: fc.array(tie('e'), { maxLength: 3 }) }),
  ),
})).e;

export const arbAnySelectExpr: fc.Arbitrary<SelectExpr> = fc.oneof(arbNormalSelectExpr, arbWildSelectExpr);

const arbWildRusageItem: fc.Arbitrary<RusageItem> = fc.record(
  { name: arbText, value: arbF64, duration_s: arbF64 },
  { requiredKeys: ['name', 'value'], ...PLAIN },
);
const arbRusageItems: fc.Arbitrary<RusageItem[]> = fc.oneof(arbRusage, fc.array(arbWildRusageItem, { maxLength: 3 }));

/** A span as the schema holds it: ptile, hosts, both or neither (0 means not set, so each is positive). */
const arbAnySpan: fc.Arbitrary<Span> = fc.oneof(
  arbNormalSpan,
  fc.record({ ptile: arbPosU32, hosts: arbPosU32 }, { requiredKeys: [], ...PLAIN }),
);
const arbTexts = (max: number): fc.Arbitrary<string[]> => fc.array(arbText, { maxLength: max });
const arbAnySame: fc.Arbitrary<string[]> = fc.oneof(arbSame, arbTexts(3));
const arbAnyOrder: fc.Arbitrary<OrderKey[]> = fc.oneof(
  arbOrder,
  fc.array(rec({ name: arbText, descending: fc.boolean() }), { maxLength: 3 }),
);

const arbWildSimpleResReq: fc.Arbitrary<ResReq> = rec({
  kind: fc.constant('simple' as const),
  select: fc.array(arbAnySelectExpr, { maxLength: 3 }),
  rusage: arbRusageItems,
  span: fc.option(arbAnySpan, { nil: null }),
  same: fc.option(arbAnySame, { nil: null }),
  order: fc.option(arbAnyOrder, { nil: null }),
});
export const arbAnyCompound: fc.Arbitrary<CompoundResReq> = fc.oneof(
  arbCompoundResReq,
  rec({
    kind: fc.constant('compound' as const),
    parts: fc.array(fc.oneof(arbSimpleResReq, arbWildSimpleResReq), { maxLength: 3 }),
    operator: fc.constantFrom('+' as const, '||' as const),
  }),
);

const arbEffectiveResReqOf = (rusage: fc.Arbitrary<RusageItem[]>): fc.Arbitrary<EffectiveResReq> =>
  fc
    .tuple(
      fc.array(withOrigin(arbAnySelectExpr), { maxLength: 3 }),
      fc
        .tuple(rusage, fc.array(arbOrigin, { minLength: 4, maxLength: 4 }))
        .map(([items, origins]) => items.map((value, i) => ({ value, origin: origins[i % 4]! }))),
      fc.option(withOrigin(arbAnySpan), { nil: null }),
      fc.option(withOrigin(arbAnySame), { nil: null }),
      fc.option(withOrigin(arbAnyOrder), { nil: null }),
      fc.option(arbAnyCompound, { nil: undefined, freq: 4 }),
    )
    .map(([select, rusage, span, same, order, compound]) => {
      const r: EffectiveResReq = { select, rusage, span, same, order };
      return compound === undefined ? r : { ...r, compound };
    });
export const arbEffectiveResReq: fc.Arbitrary<EffectiveResReq> = arbEffectiveResReqOf(arbRusageItems);

// ---- job spec, dispatch record ----

export const arbHosts: fc.Arbitrary<HostTasks[]> = fc.array(rec({ host: arbText, tasks: arbU32 }), {
  maxLength: 4,
});

/** Limits as a JobSpec carries them: UInt64 seconds and bytes, a UInt32 task count; 0 means not set. */
const arbSpecLimits: fc.Arbitrary<Limits> = fc.oneof(
  // profile-arbitrary's limits reach 2^32 tasks, one past what JobSpec.limits.tasks (UInt32) holds.
  arbProfileLimits.filter((l) => l.tasks === undefined || l.tasks <= U32_MAX),
  fc.record(
    { runtime_s: arbPosU64, memory_bytes: arbPosU64, cpu_s: arbPosU64, tasks: arbPosU32 },
    { requiredKeys: [], ...PLAIN },
  ),
);
const arbAnyEnv: fc.Arbitrary<EnvVar[]> = fc.oneof(
  arbEnvVars,
  fc.array(rec({ name: arbText, value: arbText }), { maxLength: 4 }),
);

export const arbJobSpec: fc.Arbitrary<JobSpec> = fields<JobSpec>({
  resreq: arbOptText,
  tasks: fc.option(arbPosU32, { nil: null }),
  env: arbAnyEnv,
  limits: arbSpecLimits,
  preExec: arbOptText,
  postExec: arbOptText,
  command: arbTexts(5),
  cwd: arbOptText,
  stdoutPath: arbOptText,
  stderrPath: arbOptText,
  jobName: arbOptText,
  script: arbOptText,
});

const arbEffectiveLimits: fc.Arbitrary<EffectiveLimits> = fc.record(
  {
    runtime_s: withOrigin(arbF64),
    memory_bytes: withOrigin(arbF64),
    cpu_s: withOrigin(arbF64),
    tasks: withOrigin(arbF64),
  },
  { requiredKeys: [], ...PLAIN },
);

const arbDispatchRecordOf = (resreq: fc.Arbitrary<EffectiveResReq>): fc.Arbitrary<DispatchRecord> =>
  fields<DispatchRecord>({
    profile: arbOptText,
    profileHash: arbOptText,
    mode: fc.constant('direct'),
    launchType: fc.constantFrom('serial', 'openmpi', 'mpich'),
    resreq,
    tasks: arbU32,
    hosts: arbHosts,
    env: fc.array(withOrigin(rec({ name: arbText, value: arbText })), { maxLength: 4 }),
    limits: arbEffectiveLimits,
    profilePreExec: arbOptText,
    profilePostExec: arbOptText,
    jobPreExec: arbOptText,
    jobPostExec: arbOptText,
  });

export const arbDispatchRecord: fc.Arbitrary<DispatchRecord> = arbDispatchRecordOf(arbEffectiveResReq);
/** A running job's record: its reservations are exact amounts, so that usage.ts can account them. */
const arbRunRecord: fc.Arbitrary<DispatchRecord> = arbDispatchRecordOf(arbEffectiveResReqOf(arbRusage));

// ---- facts ----

export const arbConfigFiles: fc.Arbitrary<ConfigFile[]> = fc.array(rec({ path: arbText, text: arbText }), {
  maxLength: 4,
});

export const arbJobStatus: fc.Arbitrary<JobStatus> = fc.oneof(
  rec({ type: fc.constant('started' as const), pid: arbU32, timeMs: arbI64 }),
  rec({
    type: fc.constant('finished' as const),
    exitCode: arbI32,
    signal: arbOptText,
    reason: arbOptText,
    timeMs: arbI64,
  }),
  rec({ type: fc.constant('launchError' as const), reason: arbText }),
  rec({ type: fc.constantFrom('suspended' as const, 'resumed' as const), timeMs: arbI64 }),
);

/**
 * A worker's registration with any values the schema holds (the codec checks none; apply does):
 * booleans and strings absent (null: "states none"), empty or set; numerics with any double.
 */
export const arbRegisteredHost: fc.Arbitrary<RegisteredHost> = fields<RegisteredHost>({
  host: arbText,
  slots: arbU32,
  memBytes: arbU64,
  booleans: fc.option(arbTexts(3), { nil: null, freq: 3 }),
  numerics: fc.array(rec({ name: arbText, value: arbF64 }), { maxLength: 3 }),
  strings: fc.option(fc.array(rec({ name: arbText, value: arbText }), { maxLength: 3 }), { nil: null, freq: 3 }),
  timeMs: arbI64,
});

/**
 * A CleanFact's job ids: none, a few of any value (the codec does not check the order), or a long
 * run in id order up to a full batch of retention.ts (CLEAN_BATCH_JOBS_MAX, 10,000) ending at the
 * largest safe id.
 */
export const arbCleanJobIds: fc.Arbitrary<number[]> = fc.oneof(
  { arbitrary: fc.constant<number[]>([]), weight: 1 },
  { arbitrary: fc.array(arbU64, { maxLength: 6 }), weight: 4 },
  {
    arbitrary: fc
      .tuple(fc.integer({ min: 1, max: 10_000 }), fc.boolean())
      .map(([n, atTop]) => Array.from({ length: n }, (_, i) => (atTop ? Number.MAX_SAFE_INTEGER - n + 1 + i : 1 + i))),
    weight: 1,
  },
);

// ---- the snapshot's parts: results, sessions, jobs, whole states ----

export const arbApplyResult: fc.Arbitrary<ApplyResult> = fc.oneof(
  fc.constant({ kind: 'noop' as const }),
  rec({ kind: fc.constant('submitted' as const), jobId: arbU64 }),
  rec({
    kind: fc.constant('rejected' as const),
    code: fc.constantFrom('profile_not_defined' as const, 'additive_rule' as const, 'decode_error' as const),
    message: arbText,
  }),
  rec({
    kind: fc.constant('configApplied' as const),
    inUse: fc.array(rec({ name: arbText, isAlias: fc.boolean(), pendingJobs: arbU32 }), { maxLength: 3 }),
    warnings: arbTexts(3),
  }),
  rec({ kind: fc.constant('dispatched' as const), jobId: arbU64, runNumber: arbU32 }),
  rec({
    kind: fc.constant('declined' as const),
    jobId: arbU64,
    code: fc.constantFrom('resources' as const, 'profile_changed' as const, 'stale' as const),
    message: arbText,
  }),
  rec({ kind: fc.constant('statusApplied' as const), jobId: arbU64 }),
  rec({ kind: fc.constant('ignored' as const), jobId: arbU64, message: arbText }),
  rec({ kind: fc.constant('controlled' as const), jobId: arbU64 }),
  fc.constant({ kind: 'hostRegistered' as const }),
  rec({ kind: fc.constant('cleaned' as const), count: arbU64 }),
  rec({ kind: fc.constant('modified' as const), jobId: arbU64 }),
  fc.constant({ kind: 'hostControlled' as const }),
  fc.constant({ kind: 'credentialApplied' as const }),
);

/** A job's events (hold, suspend, modify, a worker's reports), none to a few. */
export const arbJobEvents: fc.Arbitrary<JobEvent[]> = fc.array(
  rec({ action: arbText, user: arbOptText, timeMs: arbI64, detail: arbOptText }),
  { maxLength: 3 },
);

export const arbSessions: fc.Arbitrary<Session[]> = fc.uniqueArray(
  rec({ clientId: arbText, user: arbOptText, lastSequence: arbU64, lastTimeMs: arbI64, result: arbApplyResult }),
  { selector: (s) => s.clientId, maxLength: 5 },
);

export const arbJob = (id: number): fc.Arbitrary<Job> =>
  fc.constantFrom(...JOB_STATES).chain((state) =>
    fields<Job>({
      id: fc.constant(id),
      state: fc.constant(state),
      user: arbText,
      queue: arbText,
      profile: arbOptText,
      profileRequested: arbOptText,
      spec: arbJobSpec,
      submitTimeMs: arbI64,
      runNumber: arbU32,
      requeueCount: arbU32,
      record: fc.option(isRunning({ state }) ? arbRunRecord : arbDispatchRecord, { nil: null, freq: 3 }),
      dispatchTimeMs: arbI64,
      started: fc.boolean(),
      pid: arbU32,
      startTimeMs: arbI64,
      endTimeMs: arbI64,
      exitCode: arbI32,
      signal: arbOptText,
      reason: arbOptText,
      killRequestedBy: arbOptText,
      lastDecline: arbOptText,
      heldBy: arbOptText,
      events: arbJobEvents,
      dependency: arbDependency,
    }),
  );
