import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { apply } from './apply.js';
import { encodeFact } from './facts-codec.js';
import type { JobSpec } from './facts.js';
import { submitFactFor } from './jobs.js';
import { restore, snapshot, SnapshotEncoder, SnapshotError } from './snapshot.js';
import { emptyState, removeJob, type ControllerState } from './state.js';
import { jobSpec, testClusterFiles } from '../testing/test-cluster.js';
import { applyFacts, dispatchFact, ranFacts } from '../testing/state-facts.js';

const schema = fileURLToPath(new URL('../../schema/facts.capnp', import.meta.url));
const hasCapnp = spawnSync('capnp', ['--version']).status === 0;

const SPEC: JobSpec = jobSpec({ tasks: 2, cwd: '/home/bob' });

function busyState(): ControllerState {
  const s = emptyState();
  applyFacts(s, [{ kind: 'config', files: testClusterFiles({ slots: 2 }), user: null }]);
  const cfg = s.config!.cluster;
  applyFacts(
    s,
    [submitFactFor(cfg, 'bob', 'normal', 'openfoam', SPEC), submitFactFor(cfg, 'bob', 'normal', 'serial', SPEC)],
    'c-bob',
  );
  applyFacts(s, [dispatchFact(s, 1, [{ host: 'n1', tasks: 2 }])]);
  assert.equal(s.jobs.get(1)!.state, 'RUN');
  return s;
}

test('a restored controller holds the same reservations: a dispatch on the full host is declined the same way', () => {
  const a = busyState();
  const b = restore(snapshot(a));
  assert.deepEqual([...b.usage.slots], [['n1', 2]]);
  const fact = encodeFact({
    clientId: null,
    sequence: 0,
    timeMs: 1,
    body: dispatchFact(a, 2, [{ host: 'n1', tasks: 2 }]),
  });
  const ra = apply(a, fact, a.appliedIndex + 1);
  const rb = apply(b, fact, b.appliedIndex + 1);
  assert.equal(ra.kind, 'declined');
  assert.deepEqual(rb, ra);
});

test('the session table survives a snapshot: a retry after restore returns the first result', () => {
  const a = busyState();
  const b = restore(snapshot(a));
  const retry = encodeFact({
    clientId: 'c-bob',
    sequence: 3,
    timeMs: 9,
    body: submitFactFor(a.config!.cluster, 'bob', 'normal', 'serial', SPEC),
  });
  assert.deepEqual(apply(b, retry, b.appliedIndex + 1), { kind: 'submitted', jobId: 2 });
  assert.equal(b.jobs.size, 2);
});

/** busyState with more jobs, some of them finished and restored (held as bytes: lazy-parts.ts). */
function manyJobsState(): ControllerState {
  const a = busyState();
  const cfg = a.config!.cluster;
  for (let i = 0; i < 20; i++)
    applyFacts(
      a,
      [
        submitFactFor(
          cfg,
          'bob',
          'normal',
          i % 2 === 0 ? 'serial' : 'openfoam',
          jobSpec({ command: ['echo', String(i)], cwd: '/tmp' }),
        ),
      ],
      'c-many',
    );
  applyFacts(a, [...ranFacts(1, 7), { kind: 'control', jobId: 5, action: 'kill', user: 'bob' }]);
  return restore(snapshot(a));
}

test('a snapshot written a few jobs at a time is byte for byte the one written at once', () => {
  const whole = snapshot(manyJobsState());
  for (const slice of [1, 3, 7, 22, 1000]) {
    const s = manyJobsState();
    const enc = new SnapshotEncoder(s);
    let steps = 1;
    while (!enc.step(slice)) {
      assert.equal(enc.jobsLeft, s.jobs.size - steps * slice);
      steps++;
    }
    assert.equal(steps, Math.max(1, Math.ceil(s.jobs.size / slice)), `slices of ${slice}`);
    assert.deepEqual(enc.bytes(), whole, `slices of ${slice}`);
    assert.deepEqual(restore(enc.bytes()), restore(whole));
    // The finished jobs' parts now read from the new snapshot and still read the same.
    assert.equal(s.jobs.get(1)!.record!.profile, 'openfoam');
    assert.deepEqual(snapshot(s), whole);
  }
});

test('a closed encoder writes no more: the snapshot it was writing is never completed', () => {
  const s = manyJobsState();
  const enc = new SnapshotEncoder(s);
  assert.equal(enc.step(5), false);
  assert.throws(() => enc.bytes(), /not complete: 17 jobs left/);
  enc.close();
  assert.throws(() => enc.step(5), /closed before the snapshot was complete/);
});

test('a corrupt or foreign snapshot is refused with SnapshotError', () => {
  const bytes = snapshot(busyState());
  assert.throws(() => restore(bytes.subarray(0, bytes.length - 64)), SnapshotError);
  const wrongVersion = bytes.slice();
  new DataView(wrongVersion.buffer).setUint32(16, 99, true); // Snapshot.formatVersion (root struct data word 0)
  assert.throws(() => restore(wrongVersion), /format 99/);
});

test(
  "the snapshot is a standard Cap'n Proto message (capnp decode reads it)",
  {
    skip: hasCapnp
      ? false
      : "the Cap'n Proto compiler `capnp` is not installed; facts-codec.test.ts covers the codec with committed fixtures",
  },
  () => {
    const r = spawnSync('capnp', ['decode', schema, 'Snapshot'], { input: snapshot(busyState()), encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /formatVersion = 1/);
    assert.match(r.stdout, /profile = "openfoam"/);
    assert.match(r.stdout, /lastSequence = 3/);
  },
);

test('the first released snapshot encoding (schema/fixtures/snapshot-v1.bin) still restores', () => {
  const bytes = new Uint8Array(
    readFileSync(fileURLToPath(new URL('../../schema/fixtures/snapshot-v1.bin', import.meta.url))),
  );
  const s = restore(bytes);
  assert.equal(s.appliedIndex, 5);
  assert.equal(s.nextJobId, 3);
  const j1 = s.jobs.get(1)!;
  assert.equal(j1.state, 'RUN');
  assert.equal(j1.profile, 'openfoam');
  assert.equal(j1.profileRequested, 'openfoam-old');
  assert.equal(j1.pid, 4242);
  assert.equal(j1.record!.profile, 'openfoam');
  assert.equal(j1.record!.launchType, 'openmpi');
  assert.deepEqual(j1.record!.hosts, [{ host: 'n1', tasks: 2 }]);
  assert.deepEqual([...s.usage.slots], [['n1', 2]]);
  const j2 = s.jobs.get(2)!;
  assert.equal(j2.state, 'PEND');
  assert.equal(j2.profile, 'serial');
  assert.equal(j2.queue, 'night');
  assert.deepEqual([...s.sessions.keys()], ['c-alice', 'c-bob']);
  assert.deepEqual(s.sessions.get('c-bob')!.result, { kind: 'submitted', jobId: 2 });
});

test('copy-on-write: a state changed while its snapshot is written (no announcement needed) snapshots as it was', () => {
  const s = manyJobsState();
  const whole = snapshot(s);
  const enc = new SnapshotEncoder(s);
  assert.equal(enc.step(5), false);
  // A dispatch, a kill and a requeue of jobs not yet written and of one written, a new job, a session.
  const ids = [...s.jobs.keys()];
  // A submit first: it adds a job and changes none.
  applyFacts(s, [submitFactFor(s.config!.cluster, 'bob', 'normal', 'serial', SPEC)], 'c-first');
  assert.equal(enc.step(1), false);
  applyFacts(s, [dispatchFact(s, ids[10]!)]);
  applyFacts(s, [{ kind: 'control', jobId: ids[15]!, action: 'kill', user: 'bob' }], 'c-kill');
  applyFacts(s, [{ kind: 'control', jobId: ids[2]!, action: 'kill', user: 'bob' }], 'c-kill2');
  applyFacts(s, [submitFactFor(s.config!.cluster, 'bob', 'normal', 'serial', SPEC)], 'c-late');
  assert.notEqual(s.jobs.get(ids[10]!)!.state, 'PEND');
  while (!enc.step(4));
  assert.deepEqual(enc.bytes(), whole, 'the snapshot is the state when the encoder started, byte for byte');
  assert.equal(restore(enc.bytes()).jobs.size, ids.length);
  // The state itself went on: its own snapshot now differs.
  assert.notDeepEqual(snapshot(s), whole);
});

test('jobs cleaned while their snapshot is written, reached by the encoder or not, are written at their place', () => {
  const s = manyJobsState();
  const whole = snapshot(s);
  const enc = new SnapshotEncoder(s);
  assert.equal(enc.step(1), false);
  const first = [...s.jobs.keys()][0];
  const finished = [...s.jobs.values()].filter((j) => j.state === 'DONE' || j.state === 'EXIT').map((j) => j.id);
  assert.ok(finished.length >= 2 && finished[0] === first, `finished jobs ${finished.join(', ')}, first ${first}`);
  applyFacts(s, [{ kind: 'clean', jobIds: finished }]);
  assert.ok(
    finished.every((id) => !s.jobs.has(id)),
    'the finished jobs left the state',
  );
  while (!enc.step(3));
  assert.deepEqual(enc.bytes(), whole, 'the snapshot is the state when the encoder started, byte for byte');
});

test('a table out of submit order is written as it is; a job leaving it during the encoding fails the step', () => {
  const s = manyJobsState();
  const reversed = [...s.jobs.values()].reverse();
  s.jobs.clear();
  for (const j of reversed) s.jobs.set(j.id, j);
  const enc = new SnapshotEncoder(s);
  assert.equal(enc.step(2), false);
  removeJob(s, reversed[reversed.length - 1]!);
  assert.throws(() => {
    while (!enc.step(2));
  }, /^Error: jobs left a job table out of submit order during its snapshot: job \d+ after job \d+$/);
});
