// apply, issue 21: a session belongs to the user who first used it; a job text value holding a NUL
// byte is refused at submit naming its field; a status on a run that is not current changes
// nothing. Every fact goes through its Cap'n Proto bytes, as on the real path.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { apply as applyUnchecked } from './apply.js';
import { buildDispatchRecord } from './dispatch-record.js';
import { encodeFact } from './facts-codec.js';
import type { ApplyResult, FactBody, JobSpec } from './facts.js';
import { checkStateInvariants } from './invariants.js';
import { liveMerge, submitFactFor } from './jobs.js';
import { peekSession } from './sessions.js';
import { restore, snapshot } from './snapshot.js';
import { emptyState, type ControllerState } from './state.js';
import { jobSpec, testClusterFiles } from '../testing/test-cluster.js';
import { finishedFact } from '../testing/state-facts.js';

const T0 = 1_764_547_200_000;

class Log {
  state: ControllerState = emptyState();
  private index = 0;
  private timeMs = T0;

  fact(body: FactBody, client: string | null = null, sequence = 0): ApplyResult {
    this.timeMs += 1000;
    const r = applyUnchecked(
      this.state,
      encodeFact({ clientId: client, sequence, timeMs: this.timeMs, body }),
      ++this.index,
    );
    checkStateInvariants(this.state);
    return r;
  }

  submit(user: string, client: string, sequence: number, spec: Partial<JobSpec> = {}): ApplyResult {
    return this.fact(
      submitFactFor(this.state.config!.cluster, user, 'normal', 'serial', jobSpec(spec)),
      client,
      sequence,
    );
  }

  dispatch(jobId: number, host: string): ApplyResult {
    const job = this.state.jobs.get(jobId)!;
    const m = liveMerge(this.state.config!.cluster, job.profile, job.spec);
    assert.ok(m.ok);
    const hosts = [{ host, tasks: 1 }];
    return this.fact({
      kind: 'dispatch',
      jobId,
      runNumber: job.runNumber + 1,
      placement: hosts,
      record: buildDispatchRecord(m.effective, m.hash, hosts),
      schedulerHash: m.hash,
    });
  }
}

function configured(): Log {
  const l = new Log();
  assert.equal(l.fact({ kind: 'config', files: testClusterFiles(), user: null }).kind, 'configApplied');
  return l;
}

const FOREIGN = { kind: 'rejected', code: 'not_authorized', message: 'session client-x belongs to another user' };

test("a session belongs to the user who first used it: bob can neither push alice's sequence forward nor read her results", () => {
  const l = configured();
  const first = l.submit('alice', 'client-x', 1);
  assert.deepEqual(first, { kind: 'submitted', jobId: 1 });
  // bob names alice's client id: a new sequence, a control, and a retry of her request.
  assert.deepEqual(l.submit('bob', 'client-x', 7), FOREIGN);
  assert.deepEqual(l.fact({ kind: 'control', jobId: 1, action: 'kill', user: 'bob' }, 'client-x', 8), FOREIGN);
  assert.deepEqual(l.submit('bob', 'client-x', 1), FOREIGN, 'a retry of her sequence does not give bob her result');
  assert.equal(l.state.jobs.size, 1);
  const s = l.state.sessions.get('client-x')!;
  assert.equal(s.user, 'alice');
  assert.equal(s.lastSequence, 1, "alice's sequence did not move");
  // alice's retry still gets her first answer, and her next request is new.
  assert.deepEqual(l.submit('alice', 'client-x', 1), first);
  assert.deepEqual(l.submit('alice', 'client-x', 2), { kind: 'submitted', jobId: 2 });
  // The leader's early check (peekSession) gives the same answer as apply.
  assert.deepEqual(peekSession(l.state.sessions, 'client-x', 9, l.state.logTimeMs, 'bob'), {
    kind: 'foreign',
    result: FOREIGN,
  });
  assert.equal(peekSession(l.state.sessions, 'client-x', 3, l.state.logTimeMs, 'alice').kind, 'new');
  // bob's own session is his.
  assert.equal(l.submit('bob', 'client-bob', 1).kind, 'submitted');
  assert.equal(l.state.sessions.get('client-bob')!.user, 'bob');
});

test('the owner of a session survives a snapshot: a restored replica refuses bob the same way', () => {
  const l = configured();
  l.submit('alice', 'client-x', 1);
  l.state = restore(snapshot(l.state));
  assert.equal(l.state.sessions.get('client-x')!.user, 'alice');
  assert.deepEqual(l.submit('bob', 'client-x', 2), FOREIGN);
  assert.equal(l.submit('alice', 'client-x', 2).kind, 'submitted');
});

test('a job text value with a NUL byte is refused at submit, naming the field', () => {
  const l = configured();
  const cases: Array<[Partial<JobSpec>, string]> = [
    [{ command: ['/bin/echo', 'a\0b'] }, 'job.command.1: contains a NUL byte'],
    [{ cwd: '/tmp\0/x' }, 'job.cwd: contains a NUL byte'],
    [{ env: [{ name: 'CASE', value: 'x\0' }] }, 'job.env.CASE: contains a NUL byte'],
    [{ preExec: 'echo\0' }, 'job.preExec: contains a NUL byte'],
    [{ postExec: '\0' }, 'job.postExec: contains a NUL byte'],
    [{ stdoutPath: 'out\0' }, 'job.stdout: contains a NUL byte'],
  ];
  let seq = 0;
  for (const [spec, message] of cases) {
    assert.deepEqual(l.submit('alice', 'client-alice', ++seq, spec), {
      kind: 'rejected',
      code: 'invalid_job',
      message,
    });
  }
  assert.equal(l.state.jobs.size, 0);
});

test('a status on a run that is not current changes nothing (the status fact names no host: apply judges by run)', () => {
  const l = configured();
  l.submit('alice', 'client-alice', 1);
  l.dispatch(1, 'n1');
  assert.equal(
    l.fact({ kind: 'control', jobId: 1, action: 'requeue', user: 'alice' }, 'client-alice', 2).kind,
    'controlled',
  );
  l.dispatch(1, 'n2');
  const job = l.state.jobs.get(1)!;
  assert.equal(job.runNumber, 2);
  const r = l.fact(finishedFact(1));
  assert.deepEqual(r, { kind: 'ignored', jobId: 1, message: 'report on run 1 of job 1, which is on run 2' });
  assert.equal(job.state, 'RUN');
  assert.equal(job.record!.hosts[0]!.host, 'n2');
});
