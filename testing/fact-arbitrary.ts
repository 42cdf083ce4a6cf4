// Random facts of every kind (every field random) for the codec's property tests; the values
// they are made of are in facts-arbitrary.ts.

import fc from 'fast-check';
import type { Fact, FactBody } from '../statemachine/facts.js';
import { CONTROL_ACTIONS } from '../statemachine/facts.js';
import {
  arbCleanJobIds,
  arbConfigFiles,
  arbDispatchRecord,
  arbHosts,
  arbI64,
  arbJobSpec,
  arbJobStatus,
  arbOptText,
  arbRegisteredHost,
  arbText,
  arbU32,
  arbU64,
  rec,
} from './facts-arbitrary.js';
import { arbCredentialFact } from './credential-arbitrary.js';

const upTo3 = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T[]> => fc.array(a, { maxLength: 3 });
const arbDispatchFact = rec({
  kind: fc.constant('dispatch' as const),
  jobId: arbU64,
  runNumber: arbU32,
  placement: arbHosts,
  record: fc.option(arbDispatchRecord, { nil: null, freq: 4 }),
  schedulerHash: arbOptText,
});
const arbJobStatusFact = rec({
  kind: fc.constant('status' as const),
  jobId: arbU64,
  runNumber: arbU32,
  status: arbJobStatus,
});

/** Every fact body, each kind as likely as the others. */
export const arbFactBody: fc.Arbitrary<FactBody> = fc.oneof(
  fc.constant({ kind: 'noop' as const }),
  rec({ kind: fc.constant('config' as const), files: arbConfigFiles, user: arbOptText }),
  rec({
    kind: fc.constant('submit' as const),
    user: arbText,
    queue: arbText,
    spec: arbJobSpec,
    profile: arbOptText,
    profileRequested: arbOptText,
    dependency: arbOptText,
    dependencyKill: fc.boolean(),
  }),
  arbDispatchFact,
  arbJobStatusFact,
  rec({
    kind: fc.constant('control' as const),
    jobId: arbU64,
    action: fc.constantFrom(...CONTROL_ACTIONS),
    user: arbText,
  }),
  rec({ kind: fc.constant('host' as const), registration: arbRegisteredHost }),
  rec({ kind: fc.constant('clean' as const), jobIds: arbCleanJobIds }),
  rec({
    kind: fc.constant('modify' as const),
    jobId: arbU64,
    user: arbText,
    queue: arbText,
    profile: arbOptText,
    profileRequested: arbOptText,
    spec: arbJobSpec,
  }),
  rec({
    kind: fc.constant('hostControl' as const),
    host: arbText,
    close: fc.boolean(),
    reason: arbOptText,
    user: arbText,
  }),
  arbCredentialFact,
  rec({ kind: fc.constant('batch' as const), dispatches: upTo3(arbDispatchFact), statuses: upTo3(arbJobStatusFact) }),
);

export const arbFact: fc.Arbitrary<Fact> = rec({
  clientId: arbOptText,
  sequence: arbU64,
  timeMs: arbI64,
  body: arbFactBody,
});
