// fast-check generators of whole controller states (the snapshot's content), built from the
// generators of facts-arbitrary.ts: every field a snapshot carries, at the extremes: jobs with random
// values in every field, job arrays with their elements, sessions, hosts, closed hosts, hosts'
// credential states and revoked tokens (issue 19), a valid test configuration or none. Test-only.

import fc from 'fast-check';
import { loadConfig } from '../model/config.js';
import { elementId } from '../model/job-id.js';
import { makeArray, newJob } from '../statemachine/arrays.js';
import {
  emptyState,
  isRunning,
  type ClosedHost,
  type ControllerState,
  type HostCredentialState,
  type Job,
  type JobArray,
} from '../statemachine/state.js';
import type { RegisteredHost } from '../statemachine/host-capacity.js';
import type { Session } from '../statemachine/sessions.js';
import { account } from '../statemachine/usage.js';
import { arbCredentialMaps } from './credential-arbitrary.js';
import { arbDependency, arbJob, arbJobSpec, arbRegisteredHost, arbSessions } from './facts-arbitrary.js';
import { arbI64, arbOptText, arbText, arbU64 } from './scalar-arbitrary.js';
import { testClusterFiles, type TestClusterOptions } from './test-cluster.js';

/** Hosts an administrator closed (`xceadmin hosts close`), each once. */
export const arbClosedHosts: fc.Arbitrary<ClosedHost[]> = fc.uniqueArray(
  fc.record({ host: arbText, reason: arbOptText, user: arbText, timeMs: arbI64 }, { noNullPrototype: true }),
  { selector: (c) => c.host, maxLength: 4 },
);

/**
 * Job arrays (ids from 2,000,001 up, apart from the plain jobs' ids) with their elements: the
 * array's shared values once, each element a job of its own state sharing them (arrays.ts).
 */
export const arbArrays: fc.Arbitrary<Array<{ array: JobArray; elements: Job[] }>> = fc
  .uniqueArray(fc.integer({ min: 2_000_001, max: 2_000_100 }), { maxLength: 2 })
  .chain((ids) =>
    ids.length === 0
      ? fc.constant([])
      : fc.tuple(
          ...ids.map((id) =>
            fc
              .tuple(
                arbText,
                arbText,
                arbOptText,
                arbOptText,
                arbJobSpec,
                arbI64,
                arbDependency,
                fc.constantFrom('a[1-3]', 'sweep[1,5,9-10]%2', 'b[2-8:3]%1'),
              )
              .chain(([user, queue, profile, profileRequested, spec, submitTimeMs, dependency, jobName]) => {
                const array = makeArray({
                  id,
                  user,
                  queue,
                  profile,
                  profileRequested,
                  spec: { ...spec, jobName },
                  submitTimeMs,
                  dependency,
                })!;
                return fc.tuple(...array.indices.map((i) => arbJob(elementId(id, i)))).map((own) => ({
                  array,
                  elements: own.map((j) => ({ ...newJob(j.id, array), ...ownOf(j) })),
                }));
              }),
          ),
        ),
  );

/** A job's own run state (what an array element holds of its own). */
function ownOf(j: Job): Partial<Job> {
  const {
    id: _id,
    user: _u,
    queue: _q,
    profile: _p,
    profileRequested: _r,
    spec: _s,
    submitTimeMs: _t,
    dependency: _d,
    ...own
  } = j;
  return own;
}

const CONFIG_VARIANTS: readonly TestClusterOptions[] = [{}, { withoutOpenfoam: true }, { renameOpenfoamTo: 'foam' }];

/**
 * A whole controller state with random values in every field a snapshot carries (the usage is
 * derived, as restore derives it). The configuration, when there is one, is a valid test cluster:
 * restore rebuilds it with loadConfig. Plain jobs' ids stay below the array ids and element ids.
 */
export const arbControllerState: fc.Arbitrary<ControllerState> = fc
  .tuple(
    fc.option(fc.constantFrom(...CONFIG_VARIANTS), { nil: null }),
    fc.uniqueArray(fc.integer({ min: 1, max: 2_000_000 }), { maxLength: 6 }),
    arbSessions,
    arbU64,
    arbI64,
    arbU64,
    fc.uniqueArray(arbRegisteredHost, { selector: (h) => h.host, maxLength: 4 }),
    arbU64,
    arbClosedHosts,
    arbArrays,
    arbCredentialMaps,
  )
  .chain(([variant, ids, sessions, appliedIndex, logTimeMs, nextJobId, hosts, jobsCleaned, closed, arrays, creds]) =>
    (ids.length === 0 ? fc.constant([] as Job[]) : fc.tuple(...ids.map(arbJob))).map((plain) =>
      assembleState({
        variant,
        counters: { appliedIndex, logTimeMs, nextJobId, jobsCleaned },
        jobs: [...plain, ...arrays.flatMap((a) => a.elements)],
        arrays,
        sessions,
        hosts,
        closed,
        credentials: creds,
      }),
    ),
  );

/** What a whole state is put together from (the usage is derived from the running jobs). */
export interface StateParts {
  readonly variant: TestClusterOptions | null;
  readonly counters: Pick<ControllerState, 'appliedIndex' | 'logTimeMs' | 'nextJobId' | 'jobsCleaned'>;
  /** Plain jobs and array elements. */
  readonly jobs: readonly Job[];
  readonly arrays: readonly { readonly array: JobArray }[];
  readonly sessions: readonly Session[];
  readonly hosts: readonly RegisteredHost[];
  readonly closed: readonly ClosedHost[];
  readonly credentials?: readonly [Array<[string, HostCredentialState]>, Array<[string, number]>];
}

/** The controller state of `p`; its configuration, when there is one, is the test cluster's `p.variant`. */
export function assembleState(p: StateParts): ControllerState {
  const state: ControllerState = { ...emptyState(), ...p.counters };
  if (p.variant !== null) {
    const files = testClusterFiles(p.variant);
    const loaded = loadConfig(files);
    if (!loaded.ok) throw new Error('the test cluster configuration does not load');
    state.config = { files, cluster: loaded.config };
  }
  for (const j of p.jobs) {
    state.jobs.set(j.id, j);
    if (isRunning(j) && j.record !== null) account(state.usage, state.config?.cluster ?? null, j.record, 1);
  }
  for (const a of p.arrays) state.arrays.set(a.array.id, a.array);
  for (const s of p.sessions) state.sessions.set(s.clientId, s);
  for (const h of p.hosts) state.hosts.set(h.host, h);
  for (const c of p.closed) state.closedHosts.set(c.host, c);
  for (const [host, h] of p.credentials?.[0] ?? []) state.hostCredentials.set(host, h);
  for (const [jti, until] of p.credentials?.[1] ?? []) state.revokedTokens.set(jti, until);
  return state;
}
