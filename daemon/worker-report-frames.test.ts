// The `reports-batch` frames (issue 14): batching on each side and unbatching on the other, order
// kept, cut by count and bytes, malformed frames refused naming what is wrong; the worker's outbox.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type AckFrame, parseControllerFrame, parseWorkerFrame, type StatusFrame } from './worker-protocol.js';
import {
  encodeReportFrames,
  FEATURE_REPORTS_BATCH,
  REPORTS_PER_FRAME_MAX,
  statusAckFrames,
  unbatchReports,
} from './worker-report-frames.js';
import { ReportOutbox } from './worker/report-outbox.js';

const ack = (jobId: number): AckFrame => ({ type: 'ack', ref: 'start', jobId, run: 1, outcome: 'accepted' });
const status = (jobId: number, reason?: string): StatusFrame => ({
  type: 'status',
  host: 'node01',
  jobId,
  run: 1,
  statusId: `node01/${jobId}.1/finished`,
  kind: 'finished',
  exitCode: 0,
  signal: null,
  ...(reason !== undefined ? { reason } : {}),
  time_ms: 1_700_000_000_000 + jobId,
});

/** Every ack and status the frames carry, in order, read back as a controller reads them. */
function readBack(frames: readonly string[]): { acks: AckFrame[]; statuses: StatusFrame[] } {
  const out = { acks: [] as AckFrame[], statuses: [] as StatusFrame[] };
  for (const text of frames) {
    const f = parseWorkerFrame(text);
    if (f.type === 'reports') {
      const r = unbatchReports(f);
      out.acks.push(...r.acks);
      out.statuses.push(...r.statuses);
    } else if (f.type === 'ack') out.acks.push(f);
    else if (f.type === 'status') out.statuses.push(f);
    else assert.fail(`unexpected ${f.type}`);
  }
  return out;
}

test('acks and statuses go in one reports frame and read back as the single frames, in order', () => {
  const acks = [ack(3), ack(1), ack(2)];
  const statuses = [status(9), status(4, 'runtime limit 1h reached')];
  const frames = encodeReportFrames('node01', acks, statuses, 1 << 20);
  assert.equal(frames.length, 1);
  const f = parseWorkerFrame(frames[0]!);
  assert.equal(f.type, 'reports');
  assert.deepEqual(readBack(frames), { acks, statuses });
  // A lone report goes as its single frame.
  assert.deepEqual(encodeReportFrames('node01', [], [status(5)], 1 << 20), [JSON.stringify(status(5))]);
  assert.deepEqual(parseWorkerFrame(encodeReportFrames('node01', [ack(5)], [], 1 << 20)[0]!), ack(5));
});

test('reports are cut into frames of at most REPORTS_PER_FRAME_MAX items and of the byte limit', () => {
  const acks = Array.from({ length: 10 }, (_, i) => ack(i + 1));
  const statuses = Array.from({ length: REPORTS_PER_FRAME_MAX + 190 }, (_, i) => status(i + 1));
  const frames = encodeReportFrames('node01', acks, statuses, 4 << 20);
  assert.equal(frames.length, 2);
  assert.deepEqual(readBack(frames), { acks, statuses });

  const long = Array.from({ length: 40 }, (_, i) => status(i + 1, 'x'.repeat(2000)));
  const bytesMax = 16 * 1024;
  const cut = encodeReportFrames('node01', [], long, bytesMax);
  assert.ok(cut.length >= 5, `${cut.length} frames`);
  for (const text of cut) assert.ok(Buffer.byteLength(text) <= bytesMax, `${Buffer.byteLength(text)} bytes`);
  assert.deepEqual(readBack(cut).statuses, long);
});

test('status ids are acked in status-acks frames of at most REPORTS_PER_FRAME_MAX, one alone as status-ack', () => {
  assert.deepEqual(statusAckFrames(['a/1.1/started']), [{ type: 'status-ack', statusId: 'a/1.1/started' }]);
  const ids = Array.from({ length: 2 * REPORTS_PER_FRAME_MAX + 6 }, (_, i) => `a/${i + 1}.1/finished`);
  const frames = statusAckFrames(ids);
  assert.deepEqual(
    frames.map((f) => (f.type === 'status-acks' ? f.statusIds.length : 1)),
    [REPORTS_PER_FRAME_MAX, REPORTS_PER_FRAME_MAX, 6],
  );
  const back = frames.flatMap((f) => {
    const p = parseControllerFrame(JSON.stringify(f));
    return p.type === 'status-acks' ? p.statusIds : [];
  });
  assert.deepEqual(back, ids);
});

test('malformed reports-batch frames are refused naming what is wrong', () => {
  const bad: Array<[() => unknown, RegExp]> = [
    [() => parseControllerFrame('{"type":"status-acks","statusIds":[]}'), /statusIds: Too small/],
    [
      () => parseControllerFrame(JSON.stringify({ type: 'status-acks', statusIds: Array(513).fill('a') })),
      /statusIds: Too big/,
    ],
    [() => parseControllerFrame('{"type":"status-acks","statusIds":[""]}'), /statusIds\.0: Too small/],
    [
      () => parseControllerFrame('{"type":"registered","leaderId":1,"heartbeat_ms":1000,"features":["x",7]}'),
      /features\.1: /,
    ],
    [() => parseWorkerFrame('{"type":"reports","host":"node01","acks":[]}'), /statuses: /],
    [
      () => parseWorkerFrame(JSON.stringify({ type: 'reports', host: 'node01', acks: [ack(1)], statuses: [] })),
      /acks\.0: Unrecognized key: "type"/,
    ],
    [
      () =>
        parseWorkerFrame(
          JSON.stringify({ type: 'reports', host: 'node01', acks: [], statuses: [{ jobId: 1, run: 1 }] }),
        ),
      /statuses\.0\.statusId: /,
    ],
  ];
  for (const [parse, message] of bad) assert.throws(parse, message);
  assert.deepEqual(
    parseControllerFrame(
      JSON.stringify({
        type: 'registered',
        leaderId: 1,
        heartbeat_ms: 1000,
        features: [FEATURE_REPORTS_BATCH, 'later'],
      }),
    ),
    { type: 'registered', leaderId: 1, heartbeat_ms: 1000, features: [FEATURE_REPORTS_BATCH, 'later'] },
  );
});

test("the worker's outbox sends one turn's acks and statuses as one frame; other frames are not its", async () => {
  const written: string[] = [];
  let open = true;
  const box = new ReportOutbox('node01', (text) => open && written.push(text) > 0);
  assert.equal(box.push({ type: 'heartbeat', host: 'node01', seq: 0 }), false);
  assert.equal(box.push(ack(1)), true);
  assert.equal(box.push(status(1)), true);
  assert.equal(box.push(ack(2)), true);
  assert.equal(written.length, 0, 'nothing before the turn is over');
  await new Promise((r) => setImmediate(r));
  assert.equal(written.length, 1);
  assert.deepEqual(readBack(written), { acks: [ack(1), ack(2)], statuses: [status(1)] });
  // The next turn: a lone status goes as its single frame.
  box.push(status(2));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(written.slice(1), [JSON.stringify(status(2))]);
  // The connection closed meanwhile: what was queued is dropped, nothing written.
  open = false;
  box.push(status(3));
  box.push(status(4));
  await new Promise((r) => setImmediate(r));
  assert.equal(written.length, 2);
  assert.equal(box.frames, 2);
});
