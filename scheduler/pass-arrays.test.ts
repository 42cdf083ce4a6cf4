// The pass with job arrays and dependencies: the %N limit (counting dispatches in flight), a
// dependency waiting, met, and never met (reported for --dep-never kill, and killed by apply).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { schedulePass } from './pass.js';
import { TestCluster } from '../testing/scheduler-cluster.js';
import { submitFactFor } from '../statemachine/jobs.js';
import { elementId } from '../model/job-id.js';
import type { SubmitFact } from '../statemachine/facts.js';

const HOSTS = `  - { name: n1, slots: 8, mem: 64G, resources: [ib, x86_64], numeric: { mem: 64000 } }
  - { name: n2, slots: 8, mem: 64G, resources: [ib, x86_64], numeric: { mem: 64000 } }
`;

function submit(c: TestCluster, jobName: string | null, dependency: string | null = null, kill = false): number {
  const body: SubmitFact = submitFactFor(
    c.state.config!.cluster,
    'alice',
    'normal',
    null,
    {
      ...{ resreq: null, tasks: null, env: [], limits: {}, preExec: null, postExec: null },
      command: ['x'],
      cwd: '/tmp',
      stdoutPath: null,
      stderrPath: null,
      jobName,
      script: null,
    },
    { dependency, dependencyKill: kill },
  );
  const r = c.fact(body);
  assert.equal(r.kind, 'submitted', JSON.stringify(r));
  return (r as { jobId: number }).jobId;
}

function finish(c: TestCluster, id: number, exitCode: number): void {
  const job = c.state.jobs.get(id)!;
  assert.equal(
    c.fact({
      kind: 'status',
      jobId: id,
      runNumber: job.runNumber,
      status: { type: 'finished', exitCode, signal: null, reason: null, timeMs: 0 },
    }).kind,
    'statusApplied',
  );
}

test('%N: at most N elements are placed, counting those in flight; the rest say the limit is reached', () => {
  const c = new TestCluster({ hosts: HOSTS });
  const a = submit(c, 'sw[1-10]%3');
  const r = schedulePass(c.state, c.hostNames(), { maxDispatches: 100, exclude: new Set() });
  assert.deepEqual(
    r.decisions.map((d) => d.jobId),
    [1, 2, 3].map((i) => elementId(a, i)),
  );
  assert.equal(
    r.pending.get(elementId(a, 4)),
    "the job array's limit is reached: 3 of at most 3 elements running (%3)",
  );
  c.dispatch(r.decisions[0]!);
  // Two still in flight (not applied): they count.
  const inFlight = new Set([elementId(a, 2), elementId(a, 3)]);
  const r2 = schedulePass(c.state, c.hostNames(), { maxDispatches: 100, exclude: inFlight });
  assert.deepEqual(r2.decisions, []);
  finish(c, elementId(a, 1), 0);
  const r3 = schedulePass(c.state, c.hostNames(), { maxDispatches: 100, exclude: inFlight });
  assert.deepEqual(
    r3.decisions.map((d) => d.jobId),
    [elementId(a, 4)],
  );
});

test('dependencies: waiting, met, and never met (pend saying so, or reported for --dep-never kill and killed)', () => {
  const c = new TestCluster({ hosts: HOSTS });
  const first = submit(c, 'build');
  const waits = submit(c, null, 'done(build)');
  const pass = () => schedulePass(c.state, c.hostNames(), { maxDispatches: 100, exclude: new Set() });
  let r = pass();
  assert.deepEqual(
    r.decisions.map((d) => d.jobId),
    [first],
  );
  assert.equal(r.pending.get(waits), `waiting for dependency done(${first})`);
  c.dispatch(r.decisions[0]!);
  finish(c, first, 1);
  const killer = submit(c, null, `done(${first}) && started(${waits})`, true);
  r = pass();
  assert.equal(r.pending.get(waits), `dependency done(${first}) can never be satisfied: job ${first} exited with 1`);
  assert.deepEqual(r.dependencyNever, [killer], 'only the --dep-never kill job is reported');
  const k = c.fact({ kind: 'control', jobId: killer, action: 'dependencyNever', user: '' });
  assert.equal(k.kind, 'controlled');
  assert.equal(c.state.jobs.get(killer)!.state, 'EXIT');
  assert.equal(
    c.state.jobs.get(killer)!.reason,
    `killed (--dep-never kill): dependency done(${first}) can never be satisfied: job ${first} exited with 1`,
  );
  // The pending one (no kill) is refused the leader's kill: apply checks again.
  assert.equal(c.fact({ kind: 'control', jobId: waits, action: 'dependencyNever', user: '' }).kind, 'rejected');
  // A requeue of the failed job makes the dependency undecided again, and done() then meets it.
  assert.equal(c.fact({ kind: 'control', jobId: first, action: 'requeue', user: 'alice' }).kind, 'controlled');
  r = pass();
  assert.equal(r.pending.get(waits), `waiting for dependency done(${first})`);
  c.dispatch(r.decisions[0]!);
  finish(c, first, 0);
  assert.deepEqual(
    pass().decisions.map((d) => d.jobId),
    [waits],
  );
});

test('a whole array as a dependency: ended(NAME[*]) waits for every element', () => {
  const c = new TestCluster({ hosts: HOSTS });
  const a = submit(c, 'sw[1-2]');
  const after = submit(c, null, 'ended(sw[*])');
  const pass = () => schedulePass(c.state, c.hostNames(), { maxDispatches: 100, exclude: new Set() });
  const r = pass();
  for (const d of r.decisions) c.dispatch(d);
  finish(c, elementId(a, 1), 0);
  assert.equal(pass().pending.get(after), `waiting for dependency ended(${a}[*])`);
  finish(c, elementId(a, 2), 3);
  assert.deepEqual(
    pass().decisions.map((d) => d.jobId),
    [after],
  );
});
