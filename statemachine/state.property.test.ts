// FIELD COMPLETENESS (the brief's /xce-audit-invariants): every field of every job, dispatch
// record, job spec, session and result survives snapshot → restore, and replaying the log from
// any snapshot point gives the state replaying from the start gives.
//
// The generators build `Job`, `JobSpec` and `DispatchRecord` as typed object literals, so a field
// added to one of those types does not compile here until it gets a generator; from then on a
// snapshot that does not carry it fails the first property (the restored object lacks the random
// value). `JOB_FIELDS` is checked against the restored objects' own keys as well.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import fc from 'fast-check';
import { apply as applyUnchecked } from './apply.js';
import { buildDispatchRecord, type DispatchRecord, type EffectiveLimits, type HostTasks } from './dispatch-record.js';
import { decodeFact, DISPATCH_RECORD_FIELDS, encodeFact, JOB_SPEC_FIELDS } from './facts-codec.js';
import type { ApplyResult, DispatchFact, Fact, FactBody, JobSpec, JobStatus, JobStatusFact } from './facts.js';
import { CONTROL_ACTIONS } from './facts.js';
import { liveMerge } from './jobs.js';
import { cleanCandidates } from './retention.js';
import { checkStateInvariants } from './invariants.js';
import { LazyDispatchRecord, LazyJobSpec, PendingJobSpec } from './lazy-parts.js';
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
import type { RegisteredHost } from './host-capacity.js';
import type { Session } from './sessions.js';
import { restore, snapshot, SnapshotEncoder } from './snapshot.js';
import { arbFact } from '../testing/fact-arbitrary.js';
import {
  emptyState,
  isRunning,
  JOB_FIELDS,
  JOB_STATES,
  STATE_FIELDS,
  type ClosedHost,
  type ControllerState,
  type Job,
  type JobEvent,
} from './state.js';
import { testClusterFiles, type TestClusterOptions } from '../testing/test-cluster.js';
import { arbDependency } from '../testing/facts-arbitrary.js';
import { arbArrays, assembleState } from '../testing/state-arbitrary.js';
import { arrayIdOf, isElementId } from '../model/job-id.js';

// ---- generators of the state's parts ----

/** fc.record without null-prototype objects (the codec builds plain objects; deepStrictEqual compares prototypes). */
function rec<R extends Record<string, fc.Arbitrary<unknown>>>(
  model: R,
): fc.Arbitrary<{ [K in keyof R]: R[K] extends fc.Arbitrary<infer T> ? T : never }> {
  // fc.record's own typing of a generic model loses the value types; the mapped type above restores them.
  return fc.record(model, { noNullPrototype: true }) as unknown as fc.Arbitrary<{
    [K in keyof R]: R[K] extends fc.Arbitrary<infer T> ? T : never;
  }>;
}

const arbText = fc.oneof(fc.string({ maxLength: 10 }), fc.string({ unit: 'grapheme', maxLength: 6 }));
const arbOptText = fc.option(arbText, { nil: null });
const arbU32 = fc.nat({ max: 2 ** 32 - 1 });
const arbPosU32 = fc.integer({ min: 1, max: 2 ** 32 - 1 });
const arbU64 = fc.maxSafeNat();
const arbPosU64 = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER });
const arbI64 = fc.maxSafeInteger();
const arbI32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
const arbF64 = fc.double(); // NaN, -0 and the infinities included: a Float64 field keeps them all
const arbOrigin = fc.constantFrom<Origin>('job', 'profile');

function withOrigin<T>(a: fc.Arbitrary<T>): fc.Arbitrary<WithOrigin<T>> {
  return rec({ value: a, origin: arbOrigin });
}

const arbSelectExpr: fc.Arbitrary<SelectExpr> = fc.letrec<{ e: SelectExpr }>((tie) => ({
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

const arbRusageItemOf = (value: fc.Arbitrary<number>): fc.Arbitrary<RusageItem> =>
  fc.record({ name: arbText, value, duration_s: arbF64 }, { requiredKeys: ['name', 'value'], noNullPrototype: true });
const arbRusageItem = arbRusageItemOf(arbF64);
/** What a running job may hold: an exact amount (whole thousandths, amount.ts); placementProblem refuses any other. */
const arbExactAmount = fc.oneof(
  fc.constantFrom(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7),
  fc.nat({ max: 1e9 }).map((milli) => milli / 1000),
);
const arbSpan: fc.Arbitrary<Span> = fc.record(
  { ptile: arbPosU32, hosts: arbPosU32 },
  { requiredKeys: [], noNullPrototype: true },
);
const arbOrderKeys: fc.Arbitrary<OrderKey[]> = fc.array(rec({ name: arbText, descending: fc.boolean() }), {
  maxLength: 3,
});

const arbSimple: fc.Arbitrary<ResReq> = rec({
  kind: fc.constant('simple' as const),
  select: fc.array(arbSelectExpr, { maxLength: 3 }),
  rusage: fc.array(arbRusageItem, { maxLength: 3 }),
  span: fc.option(arbSpan, { nil: null }),
  same: fc.option(fc.array(arbText, { maxLength: 3 }), { nil: null }),
  order: fc.option(arbOrderKeys, { nil: null }),
});
const arbCompound: fc.Arbitrary<CompoundResReq> = rec({
  kind: fc.constant('compound' as const),
  parts: fc.array(arbSimple, { maxLength: 3 }),
  operator: fc.constantFrom('+' as const, '||' as const),
});

const arbEffectiveResReqOf = (rusageItem: fc.Arbitrary<RusageItem>): fc.Arbitrary<EffectiveResReq> =>
  fc
    .tuple(
      fc.array(withOrigin(arbSelectExpr), { maxLength: 3 }),
      fc.array(withOrigin(rusageItem), { maxLength: 3 }),
      fc.option(withOrigin(arbSpan), { nil: null }),
      fc.option(withOrigin(fc.array(arbText, { maxLength: 3 })), { nil: null }),
      fc.option(withOrigin(arbOrderKeys), { nil: null }),
      fc.option(arbCompound, { nil: undefined }),
    )
    .map(([select, rusage, span, same, order, compound]) => {
      const r: EffectiveResReq = { select, rusage, span, same, order };
      return compound === undefined ? r : { ...r, compound };
    });

const arbEnv: fc.Arbitrary<EnvVar[]> = fc.array(rec({ name: arbText, value: arbText }), { maxLength: 3 });
const arbHosts: fc.Arbitrary<HostTasks[]> = fc.array(rec({ host: arbText, tasks: arbU32 }), { maxLength: 3 });
const arbLimits: fc.Arbitrary<Limits> = fc.record(
  { runtime_s: arbPosU64, memory_bytes: arbPosU64, cpu_s: arbPosU64, tasks: arbPosU32 },
  { requiredKeys: [], noNullPrototype: true },
);
const arbEffLimits: fc.Arbitrary<EffectiveLimits> = fc.record(
  {
    runtime_s: withOrigin(arbF64),
    memory_bytes: withOrigin(arbF64),
    cpu_s: withOrigin(arbF64),
    tasks: withOrigin(arbF64),
  },
  { requiredKeys: [], noNullPrototype: true },
);

const arbRecordOf = (resreqArb: fc.Arbitrary<EffectiveResReq>): fc.Arbitrary<DispatchRecord> =>
  fc
    .tuple(
      arbOptText,
      arbOptText,
      fc.constantFrom('serial' as const, 'openmpi' as const, 'mpich' as const),
      resreqArb,
      arbU32,
      arbHosts,
    )
    .chain(([profile, profileHash, launchType, resreq, tasks, hosts]) =>
      fc
        .tuple(
          fc.array(withOrigin(rec({ name: arbText, value: arbText })), { maxLength: 3 }),
          arbEffLimits,
          arbOptText,
          arbOptText,
          arbOptText,
          arbOptText,
        )
        .map(([env, limits, profilePreExec, profilePostExec, jobPreExec, jobPostExec]) => {
          const r: DispatchRecord = {
            profile,
            profileHash,
            mode: 'direct',
            launchType,
            resreq,
            tasks,
            hosts,
            env,
            limits,
            profilePreExec,
            profilePostExec,
            jobPreExec,
            jobPostExec,
          };
          return r;
        }),
    );

const arbRecord = arbRecordOf(arbEffectiveResReqOf(arbRusageItem));
/** A running job's record: usage.ts accounts its reservations, so they are exact amounts. */
const arbRunRecord = arbRecordOf(arbEffectiveResReqOf(arbRusageItemOf(arbExactAmount)));

const arbSpec: fc.Arbitrary<JobSpec> = fc
  .tuple(
    arbOptText,
    fc.option(arbPosU32, { nil: null }),
    arbEnv,
    arbLimits,
    arbOptText,
    arbOptText,
    fc.array(arbText, { maxLength: 4 }),
  )
  .chain(([resreq, tasks, env, limits, preExec, postExec, command]) =>
    fc
      .tuple(arbOptText, arbOptText, arbOptText, arbOptText, arbOptText)
      .map(([cwd, stdoutPath, stderrPath, jobName, script]) => {
        const s: JobSpec = {
          resreq,
          tasks,
          env,
          limits,
          preExec,
          postExec,
          command,
          cwd,
          stdoutPath,
          stderrPath,
          jobName,
          script,
        };
        return s;
      }),
  );

const arbEvents: fc.Arbitrary<JobEvent[]> = fc.array(
  rec({ action: arbText, user: arbOptText, timeMs: arbI64, detail: arbOptText }),
  { maxLength: 3 },
);

const arbJob = (id: number): fc.Arbitrary<Job> =>
  fc
    .constantFrom(...JOB_STATES)
    .chain((state) =>
      fc.tuple(
        fc.constant(state),
        arbText,
        arbText,
        arbOptText,
        arbOptText,
        arbSpec,
        arbI64,
        arbU32,
        arbU32,
        fc.option(isRunning({ state }) ? arbRunRecord : arbRecord, { nil: null }),
        arbI64,
      ),
    )
    .chain(
      ([
        state,
        user,
        queue,
        profile,
        profileRequested,
        spec,
        submitTimeMs,
        runNumber,
        requeueCount,
        record,
        dispatchTimeMs,
      ]) =>
        fc
          .tuple(
            fc.boolean(),
            arbU32,
            arbI64,
            arbI64,
            arbI32,
            arbOptText,
            arbOptText,
            arbOptText,
            arbOptText,
            arbOptText,
            arbEvents,
          )
          .map(
            ([
              started,
              pid,
              startTimeMs,
              endTimeMs,
              exitCode,
              signal,
              reason,
              killRequestedBy,
              lastDecline,
              heldBy,
              events,
            ]) => {
              const job: Job = {
                id,
                state,
                user,
                queue,
                profile,
                profileRequested,
                spec,
                submitTimeMs,
                runNumber,
                requeueCount,
                record,
                dispatchTimeMs,
                started,
                pid,
                startTimeMs,
                endTimeMs,
                exitCode,
                signal,
                reason,
                killRequestedBy,
                lastDecline,
                heldBy,
                events,
                dependency: null,
              };
              return job;
            },
          ),
    );

const arbResult: fc.Arbitrary<ApplyResult> = fc.oneof(
  fc.constant({ kind: 'noop' as const }),
  rec({ kind: fc.constant('submitted' as const), jobId: arbU64 }),
  rec({
    kind: fc.constant('rejected' as const),
    code: fc.constantFrom('profile_not_defined' as const, 'additive_rule' as const),
    message: arbText,
  }),
  rec({
    kind: fc.constant('configApplied' as const),
    inUse: fc.array(rec({ name: arbText, isAlias: fc.boolean(), pendingJobs: arbU32 }), { maxLength: 3 }),
    warnings: fc.array(arbText, { maxLength: 2 }),
  }),
  rec({ kind: fc.constant('dispatched' as const), jobId: arbU64, runNumber: arbU32 }),
  rec({
    kind: fc.constant('declined' as const),
    jobId: arbU64,
    code: fc.constantFrom('resources' as const, 'profile_changed' as const),
    message: arbText,
  }),
  rec({ kind: fc.constant('statusApplied' as const), jobId: arbU64 }),
  rec({ kind: fc.constant('ignored' as const), jobId: arbU64, message: arbText }),
  rec({ kind: fc.constant('controlled' as const), jobId: arbU64 }),
  rec({ kind: fc.constant('cleaned' as const), count: arbU64 }),
  rec({ kind: fc.constant('modified' as const), jobId: arbU64 }),
);

const arbSessions: fc.Arbitrary<Session[]> = fc.uniqueArray(
  rec({ clientId: arbText, user: arbOptText, lastSequence: arbU64, lastTimeMs: arbI64, result: arbResult }),
  { selector: (s) => s.clientId, maxLength: 5 },
);

/** A worker's registration: every field random (lists null or not), built as a typed literal so a new field needs a generator. */
const arbRegisteredHost = (host: string): fc.Arbitrary<RegisteredHost> =>
  fc
    .tuple(
      arbPosU32,
      arbU64,
      fc.option(fc.array(arbText, { maxLength: 3 }), { nil: null }),
      fc.array(rec({ name: arbText, value: arbF64 }), { maxLength: 3 }),
      fc.option(fc.array(rec({ name: arbText, value: arbText }), { maxLength: 3 }), { nil: null }),
      arbI64,
    )
    .map(([slots, memBytes, booleans, numerics, strings, timeMs]) => {
      const r: RegisteredHost = { host, slots, memBytes, booleans, numerics, strings, timeMs };
      return r;
    });

const arbRegistrations: fc.Arbitrary<RegisteredHost[]> = fc
  .uniqueArray(arbText, { maxLength: 4 })
  .chain((hosts) => (hosts.length === 0 ? fc.constant([]) : fc.tuple(...hosts.map(arbRegisteredHost))));

const arbClosedHosts: fc.Arbitrary<ClosedHost[]> = fc.uniqueArray(
  rec({ host: arbText, reason: arbOptText, user: arbText, timeMs: arbI64 }),
  { selector: (c) => c.host, maxLength: 4 },
);

const CONFIG_VARIANTS: TestClusterOptions[] = [
  {},
  { withoutOpenfoam: true },
  { renameOpenfoamTo: 'foam' },
  { foamLicenses: 2, slots: 4 },
];

const arbState: fc.Arbitrary<ControllerState> = fc
  .tuple(
    fc.option(fc.constantFrom(...CONFIG_VARIANTS), { nil: null }),
    fc.uniqueArray(fc.integer({ min: 1, max: 1_000_000 }), { maxLength: 8 }),
    arbSessions,
    arbU64,
    arbI64,
    arbU64,
    arbRegistrations,
    arbU64,
    arbClosedHosts,
    arbArrays,
    fc.array(arbDependency, { minLength: 8, maxLength: 8 }),
  )
  .chain(
    ([variant, ids, sessions, appliedIndex, logTimeMs, nextJobId, registrations, jobsCleaned, closed, arrays, deps]) =>
      (ids.length === 0 ? fc.constant([] as Job[]) : fc.tuple(...ids.map(arbJob))).map((plain) =>
        assembleState({
          variant,
          counters: { appliedIndex, logTimeMs, nextJobId, jobsCleaned },
          jobs: [...plain.map((j, i) => ({ ...j, dependency: deps[i] ?? null })), ...arrays.flatMap((a) => a.elements)],
          arrays,
          sessions,
          hosts: registrations,
          closed,
        }),
      ),
  );

// ---- comparison over every field ----

/**
 * A value read field by field through its properties, as a plain object: a restored finished job
 * holds its spec and record encoded (lazy-parts.ts), each field a getter (a pending or running
 * job: part of its spec, PendingJobSpec), and compares by what
 * every getter returns. The key lists are the codec's per-field readers, which the compiler keeps
 * complete (one per field of JobSpec / DispatchRecord).
 */
function viaFields<T extends object>(v: T, keys: readonly string[]): T {
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = (v as Record<string, unknown>)[k];
  return out as T;
}
const SPEC_KEYS = Object.keys(JOB_SPEC_FIELDS);
const RECORD_KEYS = Object.keys(DISPATCH_RECORD_FIELDS);

function plainJob(j: Job): Job {
  // The plain side must have exactly the read keys too: a field the codec does not know fails here.
  if (!(j.spec instanceof LazyJobSpec) && !(j.spec instanceof PendingJobSpec))
    assert.deepEqual(Object.keys(j.spec).sort(), [...SPEC_KEYS].sort());
  if (j.record !== null && !(j.record instanceof LazyDispatchRecord))
    assert.deepEqual(Object.keys(j.record).sort(), [...RECORD_KEYS].sort());
  return {
    ...j,
    spec: viaFields(j.spec, SPEC_KEYS),
    record: j.record === null ? null : viaFields(j.record, RECORD_KEYS),
  };
}

/** Asserts two states equal field by field, Maps in order, every job's own keys exactly JOB_FIELDS. */
function assertSameState(actual: ControllerState, expected: ControllerState): void {
  assert.deepEqual(Object.keys(actual).sort(), [...STATE_FIELDS].sort());
  for (const field of STATE_FIELDS) {
    const a = actual[field];
    const e = expected[field];
    if (field === 'jobs') {
      const plain = (m: Map<number, Job>): [number, Job][] => [...m.entries()].map(([id, j]) => [id, plainJob(j)]);
      assert.deepStrictEqual(plain(actual.jobs), plain(expected.jobs), 'state.jobs');
    } else if (a instanceof Map && e instanceof Map)
      assert.deepStrictEqual([...a.entries()], [...e.entries()], `state.${field}`);
    else if (field === 'usage') {
      const ua = actual.usage;
      const ue = expected.usage;
      const norm = (m: Map<string, number>): [string, number][] =>
        [...m.entries()].sort(([x], [y]) => (x < y ? -1 : 1));
      assert.deepStrictEqual(norm(ua.slots), norm(ue.slots), 'usage.slots');
      assert.deepStrictEqual(norm(ua.clusterRusage), norm(ue.clusterRusage), 'usage.clusterRusage');
      assert.deepStrictEqual(
        [...ua.hostRusage.entries()].map(([h, m]) => [h, norm(m)]).sort(),
        [...ue.hostRusage.entries()].map(([h, m]) => [h, norm(m)]).sort(),
        'usage.hostRusage',
      );
    } else assert.deepStrictEqual(a, e, `state.${field}`);
  }
  const fields = [...JOB_FIELDS].sort();
  for (const j of actual.jobs.values())
    assert.deepEqual(Object.keys(j).sort(), fields, `job ${j.id} has exactly the Job fields`);
}

test('field completeness: every field of every job, record, spec, session and result survives snapshot → restore', () => {
  fc.assert(
    fc.property(arbState, (state) => {
      const restored = restore(snapshot(state));
      assertSameState(restored, state);
      // and a second round trip is byte-identical (nothing depends on object identity or order luck)
      assert.deepStrictEqual(snapshot(restored), snapshot(state));
    }),
    { numRuns: 150 },
  );
});

// ---- log → replay ----

/** apply, then every state invariant (invariants.ts), so a broken one fails at the fact that broke it. */
function apply(state: ControllerState, fact: Uint8Array, index: number, removed?: Job[]): ApplyResult {
  const result = applyUnchecked(state, fact, index, removed);
  checkStateInvariants(state);
  return result;
}

/** Amounts that sum badly in floating point (0.1 + 0.2 !== 0.3), and any whole thousandths. */
const arbFraction = fc.oneof(
  fc.constantFrom(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7),
  fc.nat({ max: 3000 }).map((milli) => milli / 1000),
);
/** A host's numeric mem: fractional, small (jobs decline) or large. */
const arbHostSize = fc.oneof(arbFraction, fc.constantFrom(0, 1, 1.4, 2), fc.nat({ max: 100_000 }));

type Op =
  | {
      op: 'submit';
      user: number;
      app: number;
      tasks: number;
      resreq: number;
      mem: number;
      license: number;
      env: boolean;
      script: boolean;
      client: number;
      array: number;
      dep: number;
      kill: boolean;
    }
  | { op: 'retry' }
  | { op: 'config'; variant: number; hostMem: [number, number, number]; licenseTotal: number }
  | { op: 'dispatch'; pick: number; host: number; stale: boolean }
  | { op: 'status'; pick: number; kind: number; exit: number }
  | { op: 'signalled'; pick: number; resumed: boolean; workerTime: boolean }
  | { op: 'control'; pick: number; action: number; user: number; whole: boolean }
  | { op: 'modify'; pick: number; user: number; app: number; tasks: number; queue: number; runtime: boolean }
  | {
      op: 'noop';
      advanceMs: number;
      credential: { action: number; name: number; admin: boolean; lifeMs: number } | null;
    }
  | { op: 'register'; host: number; slots: number; mem: number; booleans: number; strings: boolean }
  | { op: 'clean'; pick: number; due: boolean }
  | { op: 'batch'; dispatches: number; pick: number; host: number; stale: boolean; statuses: number; kind: number }
  | { op: 'hostControl'; host: number; close: boolean; reason: boolean; user: number };

/** A job's -R: fixed ones, and fractional reservations of host mem and of the license pool. */
const RESREQS: readonly ((mem: number, license: number) => string | null)[] = [
  () => null,
  () => 'select[mem>100]',
  () => 'rusage[license_foam=1]',
  () => 'span[ptile=1]',
  (mem) => `rusage[mem=${mem}]`,
  (mem, license) => `rusage[mem=${mem}, license_foam=${license}]`,
  (_, license) => `rusage[license_foam=${license}]`,
];

/** -J: plain jobs, arrays with and without a limit, a malformed one (refused). */
const ARRAY_NAMES = [null, null, null, null, 'sw[1-4]%2', 'sw[1,3]', 'bad[1-'] as const;
/** -w: none, by id, by array name, an unknown name (refused), a self-reference by name (refused). */
const DEPENDENCIES = [
  null,
  null,
  null,
  null,
  null,
  'done(1)',
  'ended(sw[*]) || exit(1)',
  '!started(3[2]) && done(1)',
  'done(nosuch)',
] as const;

// Submits and dispatches weigh more: the other facts need jobs, and many submits are refused on purpose.
const arbOp: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: rec({
      op: fc.constant('submit' as const),
      user: fc.nat(3),
      app: fc.nat(4),
      tasks: fc.nat(3),
      // Half the submits reserve fractional amounts (RESREQS 4..6).
      resreq: fc.oneof(fc.nat(RESREQS.length - 1), fc.integer({ min: 4, max: RESREQS.length - 1 })),
      mem: arbFraction,
      license: arbFraction,
      env: fc.boolean(),
      script: fc.boolean(),
      client: fc.nat(3),
      array: fc.nat(ARRAY_NAMES.length - 1),
      dep: fc.nat(DEPENDENCIES.length - 1),
      kill: fc.boolean(),
    }),
  },
  fc.constant({ op: 'retry' as const }),
  rec({
    op: fc.constant('config' as const),
    variant: fc.nat(CONFIG_VARIANTS.length - 1),
    hostMem: fc.tuple(arbHostSize, arbHostSize, arbHostSize),
    licenseTotal: fc.nat(6),
  }),
  {
    weight: 2,
    arbitrary: rec({ op: fc.constant('dispatch' as const), pick: fc.nat(), host: fc.nat(2), stale: fc.boolean() }),
  },
  rec({ op: fc.constant('status' as const), pick: fc.nat(), kind: fc.nat(3), exit: fc.integer({ min: -1, max: 2 }) }),
  rec({ op: fc.constant('signalled' as const), pick: fc.nat(), resumed: fc.boolean(), workerTime: fc.boolean() }),
  // kill, requeue, restart, dependencyNever (CONTROL_ACTIONS indices)
  rec({
    op: fc.constant('control' as const),
    pick: fc.nat(),
    action: fc.constantFrom(0, 1, 2, 7),
    user: fc.nat(3),
    whole: fc.boolean(),
  }),
  // hold, release, suspend, resume (user 4: the job's owner)
  {
    arbitrary: rec({
      op: fc.constant('control' as const),
      pick: fc.nat(),
      action: fc.integer({ min: 3, max: 6 }),
      user: fc.nat(4),
      whole: fc.boolean(),
    }),
    weight: 2,
  },
  rec({
    op: fc.constant('modify' as const),
    pick: fc.nat(),
    user: fc.nat(3),
    app: fc.nat(4),
    tasks: fc.nat(3),
    queue: fc.nat(2),
    runtime: fc.boolean(),
  }),
  rec({
    op: fc.constant('noop' as const),
    advanceMs: fc.integer({ min: 0, max: 2 * 60 * 60 * 1000 }),
    // A credential fact (issue 19) after the no-op, now and then: revoke or enroll a host, revoke a token.
    credential: fc.option(
      rec({
        action: fc.nat(2),
        name: fc.nat(2),
        admin: fc.boolean(),
        lifeMs: fc.integer({ min: -60_000, max: 60 * 60 * 1000 }),
      }),
      { nil: null },
    ),
  }),
  rec({
    op: fc.constant('register' as const),
    host: fc.nat(3), // n4 is not in hosts.yaml: refused
    slots: fc.integer({ min: 0, max: 10 }), // 0 slots: refused
    mem: fc.oneof(arbHostSize, fc.constant(0.0005)), // a numeric mem of more precision than 0.001: refused
    booleans: fc.nat(2),
    strings: fc.boolean(),
  }),
  rec({ op: fc.constant('clean' as const), pick: fc.nat(), due: fc.boolean() }),
  rec({
    op: fc.constant('batch' as const),
    dispatches: fc.nat(4),
    pick: fc.nat(),
    host: fc.nat(2),
    stale: fc.boolean(),
    statuses: fc.nat(3),
    kind: fc.nat(3),
  }),
  rec({
    op: fc.constant('hostControl' as const),
    host: fc.nat(3), // n4 is not in hosts.yaml: refused
    close: fc.boolean(),
    reason: fc.boolean(),
    user: fc.nat(4), // root (USERS[4]) is the admin; the others are refused
  }),
);

const USERS = ['alice', 'bob', 'carol', 'olga'];
const APPS = [null, 'serial', 'openfoam', 'openfoam-old', 'python'];

/** Turns ops into a log of encoded facts, built against the state they are applied to. */
function buildLog(ops: Op[]): Uint8Array[] {
  const state = emptyState();
  const log: Uint8Array[] = [];
  let timeMs = 1_700_000_000_000;
  const seqs = new Map<string, number>();
  let last: Uint8Array | null = null;
  const push = (f: Fact): void => {
    const bytes = encodeFact(f);
    log.push(bytes);
    apply(state, bytes, log.length);
    if (f.clientId !== null) last = bytes;
  };
  const fact = (body: FactBody, client: string | null = null): void => {
    timeMs += 1000;
    let seq = 0;
    if (client !== null) {
      seq = (seqs.get(client) ?? 0) + 1;
      seqs.set(client, seq);
    }
    push({ clientId: client, sequence: seq, timeMs, body });
  };
  const pick = (n: number, want?: Job['state']): Job | undefined => {
    const jobs = [...state.jobs.values()].filter((j) => want === undefined || j.state === want);
    return jobs.length === 0 ? undefined : jobs[n % jobs.length];
  };
  /** The dispatch the scheduler would propose for a pending job (null: its profile does not merge). */
  const dispatchOf = (job: Job, host: number, stale: boolean): DispatchFact | null => {
    const m = liveMerge(state.config?.cluster ?? null, job.profile, job.spec);
    if (!m.ok) return null;
    const hosts: HostTasks[] = [{ host: `n${host + 1}`, tasks: m.effective.tasks }];
    const record = buildDispatchRecord(m.effective, m.hash, hosts);
    return {
      kind: 'dispatch',
      jobId: job.id,
      runNumber: job.runNumber + 1,
      placement: hosts,
      record,
      schedulerHash: stale ? 'stale-hash' : m.hash,
    };
  };
  const statusOf = (job: Job, kind: number, exit: number): JobStatusFact => ({
    kind: 'status',
    jobId: job.id,
    runNumber: job.runNumber,
    status:
      kind === 0
        ? { type: 'started' as const, pid: 100 + job.id, timeMs: 0 }
        : kind === 3
          ? { type: 'launchError' as const, reason: 'no such user' }
          : {
              type: 'finished' as const,
              exitCode: exit,
              signal: exit < 0 ? 'SIGKILL' : null,
              reason: null,
              timeMs: 0,
            },
  });
  fact({ kind: 'config', files: testClusterFiles(), user: null });
  for (const o of ops) {
    switch (o.op) {
      case 'submit': {
        const spec: JobSpec = {
          resreq: RESREQS[o.resreq]!(o.mem, o.license),
          tasks: o.tasks === 0 ? null : o.tasks,
          env: o.env ? [{ name: 'CASE', value: String(o.user) }] : [],
          limits: {},
          preExec: null,
          postExec: null,
          command: ['./run.sh'],
          cwd: '/tmp',
          stdoutPath: null,
          stderrPath: null,
          jobName: ARRAY_NAMES[o.array]!,
          script: o.script ? '#!/bin/sh\necho from a script\n' : null,
        };
        const app = APPS[o.app]!;
        fact(
          {
            kind: 'submit',
            user: USERS[o.user]!,
            queue: 'normal',
            spec,
            profile: app ?? 'serial',
            profileRequested: app,
            dependency: DEPENDENCIES[o.dep]!,
            dependencyKill: o.kill,
          },
          `c${o.client}`,
        );
        break;
      }
      case 'retry':
        // A client retry (after a failover, say): the very same bytes again.
        if (last !== null) {
          log.push(last);
          apply(state, last, log.length);
        }
        break;
      case 'config':
        fact({
          kind: 'config',
          files: testClusterFiles({ ...CONFIG_VARIANTS[o.variant], hostMem: o.hostMem, licenseTotal: o.licenseTotal }),
          user: null,
        });
        break;
      case 'dispatch': {
        const job = pick(o.pick, 'PEND');
        const d = job === undefined ? null : dispatchOf(job, o.host, o.stale);
        if (d !== null) fact(d);
        break;
      }
      case 'status': {
        const job = pick(o.pick, 'RUN') ?? pick(o.pick, 'SUSP') ?? pick(o.pick);
        if (job !== undefined) fact(statusOf(job, o.kind, o.exit));
        break;
      }
      case 'batch': {
        // One scheduler pass's decisions (distinct pending jobs, the later ones placed after the
        // earlier in apply) and a flush of statuses (on running jobs, or any job), as one entry.
        const dispatches: DispatchFact[] = [];
        const pending = [...state.jobs.values()].filter((j) => j.state === 'PEND');
        for (let i = 0; i < Math.min(o.dispatches, pending.length); i++) {
          const d = dispatchOf(pending[(o.pick + i) % pending.length]!, (o.host + i) % 3, o.stale && i === 0);
          if (d !== null) dispatches.push(d);
        }
        const statuses: JobStatusFact[] = [];
        for (let i = 0; i < o.statuses; i++) {
          const job = pick(o.pick + i, 'RUN') ?? pick(o.pick + i);
          if (job !== undefined) statuses.push(statusOf(job, (o.kind + i) % 4, i - 1));
        }
        // The leader proposes no empty batch.
        if (dispatches.length + statuses.length > 0) fact({ kind: 'batch', dispatches, statuses });
        break;
      }
      case 'signalled': {
        // A worker's report that it stopped or continued a job (a re-send carries the same time).
        const job = pick(o.pick, 'SUSP') ?? pick(o.pick, 'RUN') ?? pick(o.pick);
        if (job === undefined) break;
        const status: JobStatus = {
          type: o.resumed ? 'resumed' : 'suspended',
          timeMs: o.workerTime ? 1_700_000_000_500 : 0,
        };
        fact({ kind: 'status', jobId: job.id, runNumber: job.runNumber, status });
        break;
      }
      case 'control': {
        // Hold and release mostly on pending jobs, suspend on running ones, resume on suspended ones.
        const action = CONTROL_ACTIONS[o.action]!;
        const want = ({ hold: 'PEND', suspend: 'RUN', resume: 'SUSP' } as const)[
          action as 'hold' | 'suspend' | 'resume'
        ];
        const held = [...state.jobs.values()].filter((j) => j.heldBy !== null);
        const job =
          (action === 'release' && held.length > 0 ? held[o.pick % held.length] : undefined) ??
          (want === undefined ? undefined : pick(o.pick, want)) ??
          pick(o.pick);
        if (job === undefined) break;
        const user = USERS[o.user] ?? job.user;
        const jobId = o.whole && isElementId(job.id) ? arrayIdOf(job.id) : job.id;
        fact({ kind: 'control', jobId, action, user }, `ctl-${user}`);
        break;
      }
      case 'modify': {
        // As the leader proposes it: the job's values with some replaced (admission may refuse them).
        const job = pick(o.pick, 'PEND') ?? pick(o.pick);
        if (job === undefined) break;
        const app = APPS[o.app]!;
        const spec: JobSpec = {
          ...job.spec,
          tasks: o.tasks === 0 ? job.spec.tasks : o.tasks,
          limits: o.runtime ? { ...job.spec.limits, runtime_s: 600 } : job.spec.limits,
        };
        fact(
          {
            kind: 'modify',
            jobId: job.id,
            user: USERS[o.user]!,
            queue: ['normal', 'night', 'nosuch'][o.queue]!,
            profile: app ?? job.profile,
            profileRequested: app ?? job.profileRequested,
            spec,
          },
          `mod${o.user}`,
        );
        break;
      }
      case 'noop': {
        timeMs += o.advanceMs;
        fact({ kind: 'noop' });
        const c = o.credential;
        if (c === null) break;
        const action = (['revokeHost', 'enrollHost', 'revokeToken'] as const)[c.action]!;
        const name = action === 'revokeToken' ? `jti-${c.name}` : `node0${c.name + 1}`;
        // A token revocation holds until the token's expiry: some already past, some an hour away.
        const untilMs = action === 'revokeToken' ? timeMs + 1000 + c.lifeMs : 0;
        fact({ kind: 'credential', action, name, untilMs, user: c.admin ? 'root' : 'alice' });
        break;
      }
      case 'register':
        timeMs += 1000;
        fact({
          kind: 'host',
          registration: {
            host: `n${o.host + 1}`,
            slots: o.slots,
            memBytes: 64 * 2 ** 30,
            booleans: [null, [], ['ib']][o.booleans] ?? null,
            numerics: [{ name: 'mem', value: o.mem }],
            strings: o.strings ? [] : null,
            timeMs,
          },
        });
        break;
      case 'clean': {
        // As the leader proposes it (the jobs due at its clock), or naming any job at all: a
        // finished one leaves, a pending or running one (requeued since, say) and an unknown id stay.
        const ids = o.due ? cleanCandidates(state, timeMs + 1000) : [pick(o.pick)?.id ?? 1, state.nextJobId + 5];
        if (ids.length > 0) fact({ kind: 'clean', jobIds: ids });
        break;
      }
      case 'hostControl': {
        const user = [...USERS, 'root'][o.user]!;
        fact(
          { kind: 'hostControl', host: `n${o.host + 1}`, close: o.close, reason: o.reason ? 'disk' : null, user },
          `adm${o.user}`,
        );
        break;
      }
    }
  }
  return log;
}

function replay(
  log: readonly Uint8Array[],
  from: ControllerState,
  start: number,
): { state: ControllerState; results: ApplyResult[]; removed: [number, Job][] } {
  const results: ApplyResult[] = [];
  const removed: [number, Job][] = [];
  for (let i = start; i < log.length; i++) {
    const out: Job[] = [];
    results.push(apply(from, log[i]!, i + 1, out));
    for (const j of out) removed.push([i + 1, plainJob(j)]);
  }
  return { state: from, results, removed };
}

test('log → replay: replaying from any snapshot point gives the state (and results) replaying from the start gives', () => {
  fc.assert(
    fc.property(fc.array(arbOp, { maxLength: 60 }), fc.nat(), (ops, cutSeed) => {
      const log = buildLog(ops);
      const full = replay(log, emptyState(), 0);
      const cut = cutSeed % (log.length + 1);
      const head = replay(log.slice(0, cut), emptyState(), 0).state;
      const restored = restore(snapshot(head));
      checkStateInvariants(restored);
      const resumed = replay(log, restored, cut);
      assertSameState(resumed.state, full.state);
      assert.deepStrictEqual(resumed.results, full.results.slice(cut));
      // The records cleaned jobs hand to the accounting store: the same from any snapshot point.
      assert.deepStrictEqual(
        resumed.removed,
        full.removed.filter(([i]) => i > cut),
      );
      assertSameState(restore(snapshot(full.state)), full.state);
    }),
    { numRuns: 60 },
  );
});

test('a batch of dispatches and statuses applied in one fact gives the state and results its facts give one by one', () => {
  let batched = 0;
  fc.assert(
    fc.property(fc.array(arbOp, { minLength: 20, maxLength: 60 }), (ops) => {
      const log = buildLog(ops);
      const whole = replay(log, emptyState(), 0);
      // The same log with each batch split into its single facts (same time, no client), in order.
      const split: Uint8Array[] = [];
      const expected: ApplyResult[] = [];
      log.forEach((bytes, i) => {
        const f = decodeFact(bytes);
        const r = whole.results[i]!;
        if (f.body.kind !== 'batch') {
          split.push(bytes);
          expected.push(r);
          return;
        }
        assert.equal(r.kind, 'batch');
        if (r.kind !== 'batch') return;
        if (r.results.length > 1) batched++;
        for (const b of [...f.body.dispatches, ...f.body.statuses]) split.push(encodeFact({ ...f, body: b }));
        expected.push(...r.results);
      });
      const one = replay(split, emptyState(), 0);
      assert.deepStrictEqual(one.results, expected);
      one.state.appliedIndex = whole.state.appliedIndex; // the entries differ in number, nothing else
      assertSameState(one.state, whole.state);
      assert.deepStrictEqual(
        one.removed.map(([, j]) => j),
        whole.removed.map(([, j]) => j),
      );
    }),
    { numRuns: 60 },
  );
  assert.ok(batched > 0, 'no batch held more than one fact');
});

test('copy-on-write: any facts applied while a snapshot is encoded leave it byte for byte the state at its index', () => {
  // The log generator's facts (arrays, dependencies, clean, modify, every control, configs,
  // batches) and fully random ones, applied a few at a time between the encoder's slices; the
  // state encoded either as built by apply or as restored (finished jobs' parts held lazily).
  const kinds = new Map<string, number>();
  let changedUnwritten = 0;
  let removedUnwritten = 0;
  fc.assert(
    fc.property(
      fc.array(arbOp, { minLength: 20, maxLength: 60 }),
      fc.nat(),
      fc.array(fc.tuple(fc.nat(), arbFact), { maxLength: 4 }),
      fc.integer({ min: 1, max: 7 }),
      fc.boolean(),
      (ops, cutSeed, randomFacts, slice, restored) => {
        const log = buildLog(ops);
        const cut = cutSeed % (log.length + 1);
        const built = replay(log.slice(0, cut), emptyState(), 0).state;
        const head = restored ? restore(snapshot(built)) : built;
        const expected = snapshot(head);
        const rest = log.slice(cut);
        for (const [at, f] of randomFacts) rest.splice(at % (rest.length + 1), 0, encodeFact({ ...f, clientId: null }));
        const jobsBefore = [...head.jobs.values()];
        const enc = new SnapshotEncoder(head);
        // Spread over the slices (the first before any is written), so that all of it lands during the encoding.
        const perSlice = Math.ceil(rest.length / Math.max(1, Math.ceil(jobsBefore.length / slice)));
        let next = 0;
        let index = cut;
        let written = 0;
        do {
          const unwritten = jobsBefore.slice(written);
          for (let k = 0; k < perSlice && next < rest.length; k++, next++) {
            const bytes = rest[next]!;
            const body = decodeFact(bytes).body;
            kinds.set(body.kind, (kinds.get(body.kind) ?? 0) + 1);
            const was = unwritten.map((j) => ({ ...j }));
            applyUnchecked(head, bytes, ++index);
            changedUnwritten += unwritten.filter((j, i) => !sameJob(j, was[i]!)).length;
            removedUnwritten += unwritten.filter((j) => !head.jobs.has(j.id)).length;
          }
          written += slice;
        } while (!enc.step(slice));
        assert.deepStrictEqual(enc.bytes(), expected, 'the snapshot is the state at its index, byte for byte');
        // What was not applied during the encoding still applies after it, as usual.
        for (; next < rest.length; next++) applyUnchecked(head, rest[next]!, ++index);
        checkStateInvariants(restore(enc.bytes()));
      },
    ),
    { numRuns: 120 },
  );
  for (const k of ['submit', 'dispatch', 'status', 'control', 'clean', 'modify', 'config', 'batch', 'hostControl'])
    assert.ok((kinds.get(k) ?? 0) > 0, `no ${k} fact was applied during an encoding: ${JSON.stringify([...kinds])}`);
  assert.ok(changedUnwritten > 0, 'no fact changed a job the encoder had still to write');
  assert.ok(removedUnwritten > 0, 'no fact took out of the state a job the encoder had still to write');
});

const sameJob = (a: Job, b: Job): boolean => Object.keys(b).every((k) => a[k as keyof Job] === b[k as keyof Job]);

test('a batch fact with a client session is refused and changes nothing', () => {
  const state = emptyState();
  const r = apply(
    state,
    encodeFact({ clientId: 'c1', sequence: 1, timeMs: 5, body: { kind: 'batch', dispatches: [], statuses: [] } }),
    1,
  );
  assert.equal(r.kind, 'rejected');
  assert.match(r.kind === 'rejected' ? r.message : '', /batch fact with a client session \(c1\)/);
  assert.equal(state.sessions.size, 0, 'no session recorded');
});

test('the log generator reaches cleaned jobs (cleaning is not vacuous), each finished when it left', () => {
  let cleaned = 0;
  fc.assert(
    fc.property(fc.array(arbOp, { minLength: 40, maxLength: 60 }), (ops) => {
      const { state, results, removed } = replay(buildLog(ops), emptyState(), 0);
      cleaned += removed.length;
      assert.equal(state.jobsCleaned, removed.length);
      assert.equal(
        results.reduce((n, r) => n + (r.kind === 'cleaned' ? r.count : 0), 0),
        removed.length,
      );
      for (const [, j] of removed)
        assert.ok(j.state === 'DONE' || j.state === 'EXIT', `job ${j.id} cleaned as ${j.state}`);
    }),
    { numRuns: 40, seed: 42 },
  );
  assert.ok(cleaned > 0, 'no job was cleaned');
});

test('the log generator reaches every job state (the replay property is not vacuous)', () => {
  const seen = new Set<string>();
  fc.assert(
    fc.property(fc.array(arbOp, { minLength: 40, maxLength: 60 }), (ops) => {
      const { state, removed } = replay(buildLog(ops), emptyState(), 0);
      // A finished job may have been cleaned since: it reached its state all the same.
      for (const j of [...state.jobs.values(), ...removed.map(([, r]) => r)]) seen.add(j.state);
    }),
    { numRuns: 100, seed: 42 },
  );
  assert.deepEqual([...seen].sort(), [...JOB_STATES].sort());
});

test('the log generator reaches registrations accepted and refused, smaller than hosts.yaml, and dispatches declined for resources', () => {
  let accepted = 0;
  let refused = 0;
  let declined = 0;
  let smaller = 0;
  fc.assert(
    fc.property(fc.array(arbOp, { minLength: 40, maxLength: 60 }), (ops) => {
      const { state, results } = replay(buildLog(ops), emptyState(), 0);
      smaller += [...state.hosts.values()].filter((h) => h.slots < 8).length;
      accepted += results.filter((r) => r.kind === 'hostRegistered').length;
      refused += results.filter(
        (r) => r.kind === 'rejected' && (r.code === 'host_not_configured' || r.code === 'invalid_registration'),
      ).length;
      declined += results.filter((r) => r.kind === 'declined' && r.code === 'resources').length;
    }),
    { numRuns: 40, seed: 42 },
  );
  assert.ok(accepted > 0, 'no registration was applied');
  assert.ok(refused > 0, 'no registration was refused');
  assert.ok(declined > 0, 'no dispatch was declined for resources');
  assert.ok(smaller > 0, 'no host registered fewer slots than hosts.yaml allows');
});

test('the log generator reaches hosts closed and opened by the admin, refused for others, and job scripts (not vacuous)', () => {
  let closed = 0;
  let controlled = 0;
  let refused = 0;
  let scripts = 0;
  fc.assert(
    fc.property(fc.array(arbOp, { minLength: 40, maxLength: 60 }), (ops) => {
      const { state, results } = replay(buildLog(ops), emptyState(), 0);
      closed += state.closedHosts.size;
      controlled += results.filter((r) => r.kind === 'hostControlled').length;
      refused += results.filter(
        (r) => r.kind === 'rejected' && / is not allowed cluster:admin$/.test(r.message),
      ).length;
      scripts += [...state.jobs.values()].filter((j) => j.spec.script !== null).length;
    }),
    { numRuns: 40, seed: 42 },
  );
  assert.ok(closed > 0, 'no host ended closed');
  assert.ok(controlled > 0, 'no host was closed or opened');
  assert.ok(refused > 0, 'no host control was refused');
  assert.ok(scripts > 0, 'no job with a script');
});

test('the log generator reaches a session used by another user, refused, and sessions with owners (the owner field is not vacuous)', () => {
  let refused = 0;
  let owned = 0;
  fc.assert(
    fc.property(fc.array(arbOp, { minLength: 40, maxLength: 60 }), (ops) => {
      const { state, results } = replay(buildLog(ops), emptyState(), 0);
      refused += results.filter(
        (r) => r.kind === 'rejected' && /^session c\d belongs to another user$/.test(r.message),
      ).length;
      owned += [...state.sessions.values()].filter((s) => s.user !== null).length;
    }),
    { numRuns: 20, seed: 42 },
  );
  assert.ok(refused > 0, "no fact used another user's session");
  assert.ok(owned > 0, 'no session has an owner');
});

test('the log generator reaches revoked hosts, hosts enrolled again at a later epoch and revoked tokens (not vacuous)', () => {
  let revoked = 0;
  let reEnrolled = 0;
  let tokens = 0;
  fc.assert(
    fc.property(fc.array(arbOp, { minLength: 40, maxLength: 60 }), (ops) => {
      const { state } = replay(buildLog(ops), emptyState(), 0);
      revoked += [...state.hostCredentials.values()].filter((h) => h.revoked).length;
      reEnrolled += [...state.hostCredentials.values()].filter((h) => h.epoch > 0).length;
      tokens += state.revokedTokens.size;
    }),
    { numRuns: 100, seed: 42 },
  );
  assert.ok(
    revoked > 0 && reEnrolled > 0 && tokens > 0,
    `revoked ${revoked}, enrolled again ${reEnrolled}, tokens ${tokens}`,
  );
});

test('the log generator reaches holds, suspends, worker reports and modifications (the new facts are not vacuous)', () => {
  const seen = new Set<string>();
  let held = 0;
  fc.assert(
    fc.property(fc.array(arbOp, { minLength: 40, maxLength: 60 }), (ops) => {
      const { state, results, removed } = replay(buildLog(ops), emptyState(), 0);
      for (const j of [...state.jobs.values(), ...removed.map(([, r]) => r)]) {
        if (j.heldBy !== null) held++;
        for (const e of j.events) seen.add(e.action);
      }
      if (results.some((r) => r.kind === 'modified')) seen.add('(modified result)');
    }),
    { numRuns: 100, seed: 42 },
  );
  assert.ok(held > 0, 'no job was held');
  assert.deepEqual(
    [...seen].sort(),
    ['(modified result)', 'hold', 'modify', 'release', 'resume', 'resumed', 'suspend', 'suspended'].sort(),
  );
});
