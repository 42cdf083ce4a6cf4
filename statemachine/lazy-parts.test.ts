// A finished job restored from a snapshot holds its spec and dispatch record encoded (lazy-parts.ts):
// every field reads as the eager decoder reads it, it serialises like a plain value, it is copied
// into the next snapshot as it is and then read from there, and a job that goes back to PEND gets
// its spec decoded. A pending job holds what the scheduler reads decoded, the rest encoded
// (PendingJobSpec), under the same rules.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Reader } from '../wire/capnp-wire.js';
import { DISPATCH_RECORD_FIELDS, JOB_SPEC_FIELDS, readDispatchRecord, readJobSpec } from './facts-codec.js';
import { submitFactFor } from './jobs.js';
import { decodedRecord, decodedSpec, LazyDispatchRecord, LazyJobSpec, PendingJobSpec } from './lazy-parts.js';
import { jobDetails } from './queries.js';
import { restore, snapshot } from './snapshot.js';
import { emptyState, type ControllerState } from './state.js';
import { jobSpec, testClusterFiles } from '../testing/test-cluster.js';
import { applyFacts, dispatchFact, ranFacts } from '../testing/state-facts.js';

const SPEC = jobSpec({
  resreq: 'select[mem>100] span[ptile=1]',
  tasks: 1,
  env: [
    { name: 'CASE', value: 'c-ü' },
    { name: 'OMP_NUM_THREADS', value: '1' },
  ],
  limits: { runtime_s: 600 },
  preExec: '/bin/true',
  command: ['./run.sh', '--case=7'],
  cwd: '/home/bob',
  stdoutPath: '/home/bob/%J.out',
  jobName: 'lazy',
});

/** Job 1 ran and finished (DONE), job 2 was killed while pending (EXIT, no record), job 3 pends. */
function finishedState(): ControllerState {
  const s = emptyState();
  applyFacts(s, [{ kind: 'config', files: testClusterFiles({ slots: 2 }), user: null }]);
  const cfg = s.config!.cluster;
  applyFacts(
    s,
    [
      submitFactFor(cfg, 'bob', 'normal', 'openfoam', SPEC),
      submitFactFor(cfg, 'bob', 'normal', 'serial', SPEC),
      submitFactFor(cfg, 'bob', 'normal', 'serial', SPEC),
    ],
    'c-bob',
  );
  applyFacts(s, [dispatchFact(s, 1), ...ranFacts(1, 77), { kind: 'control', jobId: 2, action: 'kill', user: 'bob' }]);
  assert.equal(s.jobs.get(1)!.state, 'DONE');
  assert.equal(s.jobs.get(2)!.state, 'EXIT');
  return s;
}

test('a restored finished job holds its spec and record encoded; a pending job part of its spec', () => {
  const r = restore(snapshot(finishedState()));
  assert.ok(r.jobs.get(1)!.spec instanceof LazyJobSpec);
  assert.ok(r.jobs.get(1)!.record instanceof LazyDispatchRecord);
  assert.ok(r.jobs.get(2)!.spec instanceof LazyJobSpec);
  assert.equal(r.jobs.get(2)!.record, null);
  assert.ok(r.jobs.get(3)!.spec instanceof PendingJobSpec);
});

/** The JobSpec fields the scheduler reads on each pass (ownValues, MergeCache's key): decoded at restore. */
const SCHEDULER_READS = ['resreq', 'tasks', 'env', 'limits', 'preExec', 'postExec'];

test("a restored pending job's spec: what the scheduler reads is held decoded, every field reads as before the snapshot", () => {
  const before = finishedState();
  const bytes = snapshot(before);
  const after = restore(bytes);
  const spec = after.jobs.get(3)!.spec;
  assert.ok(spec instanceof PendingJobSpec);
  // Plain data properties, not getters: the scheduler's pass reads them as it reads a plain spec's.
  assert.deepEqual(
    Object.keys(spec)
      .filter((k) => k in JOB_SPEC_FIELDS)
      .sort(),
    [...SCHEDULER_READS].sort(),
  );
  const r = new Reader(bytes);
  const j2 = r.elem(r.list(r.ptr(r.struct(r.root)!, 1))!, 2); // job 3
  const eagerSpec = readJobSpec(r, r.ptr(j2, 4));
  for (const k of Object.keys(JOB_SPEC_FIELDS) as (keyof typeof JOB_SPEC_FIELDS)[]) {
    assert.deepStrictEqual(spec[k], eagerSpec[k], `spec.${k}`);
    assert.deepStrictEqual(spec[k], before.jobs.get(3)!.spec[k], `spec.${k} as submitted`);
  }
  assert.equal(spec.jobName, 'lazy');
  assert.deepEqual(spec.command, ['./run.sh', '--case=7']);
  assert.deepStrictEqual(decodedSpec(spec), before.jobs.get(3)!.spec);
  assert.equal(JSON.stringify(spec), JSON.stringify(before.jobs.get(3)!.spec));
  assert.equal(JSON.stringify(jobDetails(after, 3)), JSON.stringify(jobDetails(before, 3)));
});

test('a restored pending job is dispatched, runs and finishes as before the snapshot; its spec still reads', () => {
  const before = finishedState();
  const after = restore(snapshot(before));
  for (const s of [before, after]) applyFacts(s, [dispatchFact(s, 3), ...ranFacts(3, 78)]);
  const job = after.jobs.get(3)!;
  assert.equal(job.state, 'DONE');
  assert.deepStrictEqual(decodedRecord(job.record), before.jobs.get(3)!.record);
  assert.deepStrictEqual(decodedSpec(job.spec), before.jobs.get(3)!.spec);
  assert.deepStrictEqual(snapshot(after), snapshot(before));
});

test('every field of a lazy spec and record reads as the eager decoder reads it, and as it was before the snapshot', () => {
  const before = finishedState();
  const bytes = snapshot(before);
  const after = restore(bytes);
  const job = after.jobs.get(1)!;
  const spec = job.spec;
  const record = job.record!;
  // The eager decoder on the same bytes (the job list is the snapshot's pointer 1; job 1 is element 0).
  const r = new Reader(bytes);
  const root = r.struct(r.root)!;
  const j0 = r.elem(r.list(r.ptr(root, 1))!, 0);
  const eagerSpec = readJobSpec(r, r.ptr(j0, 4));
  const eagerRecord = readDispatchRecord(r, r.ptr(j0, 5))!;
  for (const k of Object.keys(JOB_SPEC_FIELDS) as (keyof typeof JOB_SPEC_FIELDS)[]) {
    assert.deepStrictEqual(spec[k], eagerSpec[k], `spec.${k}`);
    assert.deepStrictEqual(spec[k], before.jobs.get(1)!.spec[k], `spec.${k} as submitted`);
  }
  for (const k of Object.keys(DISPATCH_RECORD_FIELDS) as (keyof typeof DISPATCH_RECORD_FIELDS)[]) {
    assert.deepStrictEqual(record[k], eagerRecord[k], `record.${k}`);
    assert.deepStrictEqual(record[k], before.jobs.get(1)!.record![k], `record.${k} as dispatched`);
  }
  assert.deepStrictEqual(decodedSpec(spec), eagerSpec);
  assert.deepStrictEqual(decodedRecord(record), eagerRecord);
});

test('a lazy part serialises as its plain value (the API sends job details as JSON)', () => {
  const before = finishedState();
  const after = restore(snapshot(before));
  assert.equal(JSON.stringify(after.jobs.get(1)!.spec), JSON.stringify(before.jobs.get(1)!.spec));
  assert.equal(JSON.stringify(after.jobs.get(1)!.record), JSON.stringify(before.jobs.get(1)!.record));
  assert.equal(JSON.stringify(jobDetails(after, 1)), JSON.stringify(jobDetails(before, 1)));
});

test('a snapshot of a restored state is the snapshot it was restored from, byte for byte (lazy parts are copied as they are)', () => {
  const first = snapshot(finishedState());
  const again = snapshot(restore(first));
  assert.deepStrictEqual(again, first);
});

test('after the next snapshot the lazy parts read from it: the bytes they were restored from can be dropped', () => {
  const before = finishedState();
  const old = snapshot(before).slice();
  const after = restore(old);
  const next = snapshot(after);
  old.fill(0xff); // as if reused: nothing may read it any more
  assert.deepStrictEqual(decodedSpec(after.jobs.get(1)!.spec), before.jobs.get(1)!.spec);
  assert.deepStrictEqual(decodedRecord(after.jobs.get(1)!.record), before.jobs.get(1)!.record);
  assert.equal(after.jobs.get(2)!.spec.jobName, 'lazy');
  assert.equal(after.jobs.get(3)!.spec.jobName, 'lazy');
  assert.deepEqual(after.jobs.get(3)!.spec.command, ['./run.sh', '--case=7']);
  assert.deepStrictEqual(snapshot(after), next);
});

test('a lazy part read again and again never runs out of its traversal budget', () => {
  const after = restore(snapshot(finishedState()));
  const record = after.jobs.get(1)!.record!;
  // Each read is bounded on its own; the reader's whole life is not (it lives as long as the job).
  for (let i = 0; i < 20_000; i++) assert.equal(record.hosts.length, 1);
});

test('a restored finished job that is restarted or requeued goes back to PEND with its spec decoded', () => {
  const after = restore(snapshot(finishedState()));
  applyFacts(after, [{ kind: 'control', jobId: 1, action: 'restart', user: 'bob' }], 'c-bob-2');
  applyFacts(after, [{ kind: 'control', jobId: 2, action: 'requeue', user: 'bob' }], 'c-bob-3');
  for (const id of [1, 2]) {
    const job = after.jobs.get(id)!;
    assert.equal(job.state, 'PEND');
    assert.ok(!(job.spec instanceof LazyJobSpec), `job ${id}'s spec is plain`);
    assert.deepStrictEqual(job.spec, decodedSpec(job.spec));
    assert.equal(job.record, null);
    assert.deepEqual(job.spec.command, ['./run.sh', '--case=7']);
  }
});
