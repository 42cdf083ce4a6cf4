// The leader's worker endpoint against a scripted worker, on a node whose Raft is a stand-in
// (propose = apply at the next index, then the hub hears of it): a start the worker cannot take
// must end its job with a reason, whatever the worker does with it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, teardown, waitFor, worker } from '../testing/worker-hub-harness.js';
import { editJob } from '../statemachine/state.js';

test('a start the hub itself finds invalid is never sent: the job ends with a launch error naming the field', async () => {
  const s = await setup(['true']);
  // A record from before the admission checked env names (or any bug that lets one through).
  editJob(s.node.state, s.job).record = {
    ...s.job.record!,
    env: [{ value: { name: 'MY-VAR', value: '1' }, origin: 'job' }],
  };
  const w = worker(s, 'n1', () => undefined);
  try {
    await w.open;
    w.register('n1');
    await waitFor('the job to end', () => s.job.state !== 'RUN');
    assert.equal(s.job.state, 'EXIT');
    assert.match(
      s.job.reason ?? '',
      /^launch failed: the controller cannot send the start of job 1 run 1 to host n1: jobEnv\.0\.name: environment variable name "MY-VAR" is not valid/,
    );
    assert.equal(w.got.filter((f) => f.type === 'start').length, 0);
  } finally {
    await teardown(s);
  }
});

test('a kill ends a job whose start its worker refused, even when no launch-error status follows', async () => {
  const s = await setup(['true']);
  // The worker refuses the start (its queue of statuses is full, say) and sends no status for it.
  const w = worker(s, 'n1', (me, f) => {
    if (f.type === 'start')
      me.send({
        type: 'ack',
        ref: 'start',
        jobId: f.startInfo.jobId,
        run: f.startInfo.run,
        outcome: 'refused',
        reason: 'host n1 holds 65536 statuses no leader has acknowledged',
      });
    if (f.type === 'kill') me.send({ type: 'ack', ref: 'kill', jobId: f.jobId, run: f.run, outcome: 'unknown' });
  });
  try {
    await w.open;
    w.register('n1');
    await waitFor('the start', () => w.got.some((f) => f.type === 'start'));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(s.job.state, 'RUN');
    await s.node.fact({ kind: 'control', jobId: 1, action: 'kill', user: 'alice' });
    await waitFor('the job to end', () => s.job.state !== 'RUN');
    assert.equal(s.job.state, 'EXIT');
    assert.match(s.job.reason ?? '', /killed by alice/);
    assert.match(s.job.reason ?? '', /host n1 refused its start: host n1 holds 65536 statuses/);
  } finally {
    await teardown(s);
  }
});

test('a kill ends a job its head host says it does not run and never started', async () => {
  const s = await setup(['true']);
  // An older worker that dropped the start frame without a word; it answers a kill `unknown`.
  const w = worker(s, 'n1', (me, f) => {
    if (f.type === 'kill') me.send({ type: 'ack', ref: 'kill', jobId: f.jobId, run: f.run, outcome: 'unknown' });
  });
  try {
    await w.open;
    w.register('n1');
    await waitFor('the start', () => w.got.some((f) => f.type === 'start'));
    await s.node.fact({ kind: 'control', jobId: 1, action: 'kill', user: 'alice' });
    await waitFor('the job to end', () => s.job.state !== 'RUN');
    assert.equal(s.job.state, 'EXIT');
    assert.match(s.job.reason ?? '', /killed by alice before it started: host n1 does not run job 1 run 1/);
  } finally {
    await teardown(s);
  }
});
