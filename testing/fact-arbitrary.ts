// Random facts of every kind (every field random) for the codec's property tests; the values
// they are made of are in facts-arbitrary.ts.

import fc from 'fast-check';
import type { Fact, FactBody } from '../statemachine/facts.js';
import {
  arbConfigFiles,
  arbDispatchRecord,
  arbHosts,
  arbI64,
  arbJobSpec,
  arbJobStatus,
  arbOptText,
  arbText,
  arbU32,
  arbU64,
  rec,
} from './facts-arbitrary.js';

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
  }),
  arbDispatchFact,
  arbJobStatusFact,
  rec({ kind: fc.constant('batch' as const), dispatches: upTo3(arbDispatchFact), statuses: upTo3(arbJobStatusFact) }),
  rec({
    kind: fc.constant('control' as const),
    jobId: arbU64,
    action: fc.constantFrom('kill' as const, 'requeue' as const, 'restart' as const),
    user: arbText,
  }),
);

export const arbFact: fc.Arbitrary<Fact> = rec({
  clientId: arbOptText,
  sequence: arbU64,
  timeMs: arbI64,
  body: arbFactBody,
});
