// The leader's worker endpoint and the `reports-batch` feature (issue 14), against scripted workers
// on a node whose Raft is a stand-in (propose = apply at the next index): a worker that names it is
// told so at registration, its `reports` frame's statuses are one fact and are acked in one
// `status-acks` frame, its acks reach the dispatcher as single acks do; an older worker that names
// no feature gets the `registered` frame and the one-by-one `status-ack` frames it always got.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FEATURE_START_BATCH } from './worker-start-batch.js';
import { encodeReportFrames, FEATURE_REPORTS_BATCH, REPORTS_PER_FRAME_MAX } from './worker-report-frames.js';
import type { AckFrame, StatusFrame } from './worker-protocol.js';
import { joined, statusFrame, waitFor, withSetup } from '../testing/worker-hub-harness.js';

const FEATURES = [FEATURE_START_BATCH, FEATURE_REPORTS_BATCH];
const started = statusFrame('n1', 1, 1, { kind: 'started', pid: 4242 }) as StatusFrame;
const finished = statusFrame('n1', 1, 1, { kind: 'finished', exitCode: 0, signal: null }) as StatusFrame;
const accepted: AckFrame = { type: 'ack', ref: 'start', jobId: 1, run: 1, outcome: 'accepted' };

test('a worker naming reports-batch: its reports frame is one fact, acked in one status-acks frame; a re-send changes nothing and is acked again', () =>
  withSetup(async (s) => {
    const w = await joined(s, 'n1', 'start', FEATURES);
    const registered = w.got.find((f) => f.type === 'registered');
    assert.deepEqual(registered, {
      type: 'registered',
      leaderId: s.node.id,
      heartbeat_ms: 1000,
      features: [FEATURE_REPORTS_BATCH],
    });
    const frames = encodeReportFrames('n1', [accepted], [started, finished], 1 << 20);
    assert.equal(frames.length, 1);
    w.send(frames[0]!);
    await waitFor('the status-acks', () => w.got.some((f) => f.type === 'status-acks'));
    assert.deepEqual(
      w.got.filter((f) => f.type === 'status-acks' || f.type === 'status-ack'),
      [{ type: 'status-acks', statusIds: [started.statusId, finished.statusId] }],
    );
    assert.deepEqual(
      s.node.proposed.map((b) => (b.kind === 'batch' ? `batch of ${b.statuses.length}` : b.kind)),
      ['batch of 2'],
      'both statuses of the frame in one fact',
    );
    assert.equal(s.job.state, 'DONE');
    assert.equal(s.job.pid, 4242);
    assert.equal(s.hub.frames.received.get('reports'), 1);
    assert.equal(s.hub.frames.sent.get('status-acks'), 1);
    assert.equal(s.hub.frames.sent.get('status-ack'), undefined);

    // The same frame again (the worker did not get the status-acks before a reconnect, say): both
    // are proposed again in one fact, apply takes neither a second time, and both are acked together.
    const done = JSON.stringify(s.node.state.jobs.get(1));
    w.send(frames[0]!);
    await waitFor('the second status-acks', () => w.got.filter((f) => f.type === 'status-acks').length === 2);
    assert.deepEqual(w.got.filter((f) => f.type === 'status-acks')[1], {
      type: 'status-acks',
      statusIds: [started.statusId, finished.statusId],
    });
    assert.equal(s.node.proposed.length, 2);
    assert.equal(JSON.stringify(s.node.state.jobs.get(1)), done, 'the job is not changed twice');
  }));

test('the statuses of a reports frame on a run that is over are acked together, without a proposal', () =>
  withSetup(async (s) => {
    const w = await joined(s, 'n1', 'start', FEATURES);
    await s.node.fact({ kind: 'control', jobId: 1, action: 'requeue', user: 'alice' });
    w.send(encodeReportFrames('n1', [], [started, finished], 1 << 20)[0]!);
    await waitFor('the status-acks', () => w.got.some((f) => f.type === 'status-acks'));
    assert.deepEqual(
      w.got.filter((f) => f.type === 'status-acks' || f.type === 'status-ack'),
      [{ type: 'status-acks', statusIds: [started.statusId, finished.statusId] }],
    );
    assert.equal(s.node.proposed.length, 0);
    assert.equal(s.job.state, 'PEND');
  }));

test('an older worker (no features named) is registered without features and gets one status-ack per status', () =>
  withSetup(async (s) => {
    const w = await joined(s, 'n1', 'start');
    // What an older worker's strict `registered` schema takes: these three fields and no other.
    assert.deepEqual(Object.keys(w.got.find((f) => f.type === 'registered')!).sort(), [
      'heartbeat_ms',
      'leaderId',
      'type',
    ]);
    w.send(accepted);
    w.send(started);
    w.send(finished);
    await waitFor('both status-acks', () => w.got.filter((f) => f.type === 'status-ack').length === 2);
    assert.deepEqual(
      w.got.filter((f) => f.type === 'status-ack' || f.type === 'status-acks'),
      [
        { type: 'status-ack', statusId: started.statusId },
        { type: 'status-ack', statusId: finished.statusId },
      ],
    );
    assert.equal(s.job.state, 'DONE');
  }));

test('acks in a reports frame reach the dispatcher as single acks do: a kill ends a job whose start was refused', () =>
  withSetup(async (s) => {
    const w = await joined(s, 'n1', 'start', FEATURES);
    const refused: AckFrame = { ...accepted, outcome: 'refused', reason: 'host n1 is draining' };
    const signal: AckFrame = { type: 'ack', ref: 'signal', jobId: 1, run: 1, outcome: 'unknown' };
    w.send(encodeReportFrames('n1', [refused, signal], [], 1 << 20)[0]!);
    await waitFor('the refusal', () => s.logs.some((l) => l['msg'] === 'a worker refused a start'));
    assert.equal(s.job.state, 'RUN');
    await s.node.fact({ kind: 'control', jobId: 1, action: 'kill', user: 'alice' });
    await waitFor('the job to end', () => s.job.state !== 'RUN');
    assert.equal(s.job.state, 'EXIT');
    assert.match(s.job.reason ?? '', /host n1 refused its start: host n1 is draining/);
  }));

test('a malformed reports frame closes the connection with a reason naming what is wrong', () =>
  withSetup(async (s) => {
    const cases: Array<[string, RegExp]> = [
      ['{"type":"reports","host":"n1","acks":[],"statuses":[]}', /statuses: a reports frame carries 1 to 512/],
      [
        JSON.stringify({
          type: 'reports',
          host: 'n1',
          acks: Array.from({ length: REPORTS_PER_FRAME_MAX }, () => ({ ...accepted, type: undefined })),
          statuses: [{ ...started, type: undefined, host: undefined }],
        }),
        /statuses: a reports frame carries 1 to 512 acks and statuses in all/,
      ],
      [
        JSON.stringify({ type: 'reports', host: 'n1', acks: [], statuses: [{ ...started, host: 'n1' }] }),
        /statuses\.0: Unrecognized keys?: "type", "host"/,
      ],
      [
        JSON.stringify({ type: 'reports', host: 'n1', acks: [{ ref: 'start', jobId: 1, run: 1 }], statuses: [] }),
        /acks\.0\.outcome/,
      ],
      [encodeReportFrames('n2', [accepted], [started], 1 << 20)[0]!, /frames must name the authenticated host n1/],
    ];
    for (const [frame, reason] of cases) {
      const w = await joined(s, 'n1', 'registered', FEATURES);
      w.send(frame);
      await waitFor('the connection to close', () => w.closed !== null);
      assert.equal(w.closed!.code, 1008, frame.slice(0, 80));
      assert.match(w.closed!.reason, reason);
    }
    assert.equal(s.node.proposed.length, 0);
  }));
