// The state invariants checker: silent on every state apply produces (apply.test.ts and
// state.property.test.ts run it after each fact), and loud, listing every violation, on a state
// apply could not have produced.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { apply } from './apply.js';
import { buildDispatchRecord } from './dispatch-record.js';
import type { FactBody } from './facts.js';
import { checkStateInvariants, StateInvariantError, stateInvariantViolations } from './invariants.js';
import { liveMerge, submitFactFor } from './jobs.js';
import { restore, snapshot } from './snapshot.js';
import { editJob, emptyState, type ControllerState } from './state.js';
import { jobSpec, testClusterFiles } from '../testing/test-cluster.js';
import { finishedFact } from '../testing/state-facts.js';

const T0 = 1_764_547_200_000;

/** A state with job 1 DONE, job 2 RUN (mem 0.5 on n1) and job 3 PEND, all through apply. */
function sample(): ControllerState {
  const s = emptyState();
  let index = 0;
  const fact = (body: FactBody): void =>
    void apply(s, { clientId: 'c', sequence: ++index, timeMs: T0 + index, body }, index);
  fact({ kind: 'config', files: testClusterFiles(), user: null });
  for (let k = 0; k < 3; k++)
    fact(submitFactFor(s.config!.cluster, 'alice', 'normal', null, jobSpec({ resreq: 'rusage[mem=0.5]' })));
  for (const id of [1, 2]) {
    const m = liveMerge(s.config!.cluster, 'serial', s.jobs.get(id)!.spec);
    assert.ok(m.ok);
    const placement = [{ host: 'n1', tasks: 1 }];
    fact({
      kind: 'dispatch',
      jobId: id,
      runNumber: 1,
      placement,
      record: buildDispatchRecord(m.effective, m.hash, placement),
      schedulerHash: m.hash,
    });
  }
  fact(finishedFact(1));
  assert.deepEqual(
    [...s.jobs.values()].map((j) => j.state),
    ['DONE', 'RUN', 'PEND'],
  );
  return s;
}

test('a state built by apply, and its restored snapshot, break no invariant', () => {
  const s = sample();
  assert.deepEqual(stateInvariantViolations(s), []);
  checkStateInvariants(restore(snapshot(s)));
  checkStateInvariants(emptyState());
});

test('every violation is listed, each naming what is wrong and where', () => {
  const s = sample();
  s.usage.hostRusage.get('n1')!.set('mem', 499);
  editJob(s, s.jobs.get(3)!).record = s.jobs.get(2)!.record;
  editJob(s, s.jobs.get(2)!).endTimeMs = T0;
  editJob(s, s.jobs.get(1)!).exitCode = 3;
  s.nextJobId = 3;
  s.sessions.get('c')!.lastTimeMs = s.logTimeMs + 1;
  assert.throws(
    () => checkStateInvariants(s),
    (e: unknown) => {
      assert.ok(e instanceof StateInvariantError);
      assert.deepEqual(e.violations, [
        '3 jobs and 0 cleaned, but 2 ids handed out',
        'job 1 (DONE): exitCode 3',
        'job 2 (RUN): endTimeMs 1764547200000 but not ended',
        'job 3: id not below nextJobId 3',
        'job 3 (PEND): holds a dispatch record',
        'session c: lastTimeMs 1764547200008 after logTimeMs 1764547200007',
        'usage.hostRusage n1 mem: holds 499, a rebuild from the running jobs gives 500',
      ]);
      assert.match(
        e.message,
        /^the controller state breaks 7 invariants:\n- 3 jobs and 0 cleaned, but 2 ids handed out\n/,
      );
      return true;
    },
  );
});

test("the checker never reads a finished job's spec or dispatch record (held lazily after a restore)", () => {
  const s = restore(snapshot(sample()));
  const untouchable = new Proxy({}, { get: (_, key) => assert.fail(`read ${String(key)} of a finished job's part`) });
  const done = editJob(s, s.jobs.get(1)!);
  done.spec = untouchable as typeof done.spec;
  done.record = untouchable as NonNullable<typeof done.record>;
  checkStateInvariants(s);
});
