// The /worker wire contract: frames validated both ways, errors naming the field, size limit, auth.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChallengeBook, handshakeHeaders } from './handshake.js';
import { deriveClusterKeys, hostCredentialKey } from './keys.js';
import {
  authenticateWorker,
  encodeFrame,
  unreadableStart,
  unreadableStartValue,
  parseControllerFrame,
  parseStartInfo,
  parseWorkerFrame,
  type StartInfo,
  statusIdOf,
  toWorkerUrl,
  WORKER_FRAME_BYTES_MAX,
  WORKER_HEADER_HOST,
  WorkerFrameError,
} from './worker-protocol.js';
import {
  FEATURE_START_BATCH,
  STARTS_PER_FRAME_MAX,
  WORKER_HEADER_FEATURES,
  encodeStartFrames,
  parseStartValue,
  startsOf,
  workerFeatures,
} from './worker-start-batch.js';

const INFO: StartInfo = {
  jobId: 12,
  run: 1,
  user: 'alice',
  queue: 'normal',
  profile: 'openfoam',
  profileLabel: 'openfoam@3f2a9c',
  mode: 'direct',
  launchType: 'openmpi',
  command: ['simpleFoam', '-parallel'],
  cwd: '/home/alice/cavity',
  stdout: null,
  stderr: 'err-%J.txt',
  tasks: 8,
  hosts: [
    { host: 'node01', tasks: 4 },
    { host: 'node02', tasks: 4 },
  ],
  profileEnv: [{ name: 'FOAM_INST_DIR', value: '/opt/openfoam' }],
  jobEnv: [{ name: 'CASE', value: 'cavity' }],
  profilePreExec: '/opt/xce/foam-licence-check',
  profilePostExec: null,
  jobPreExec: null,
  jobPostExec: 'tar czf results.tgz processor*',
  limits: { runtime_s: 3600, memory_bytes: 64 * 1024 ** 3 },
};

test('a start frame round-trips through encode and parse', () => {
  const text = encodeFrame({ type: 'start', startInfo: INFO });
  assert.deepEqual(parseControllerFrame(text), { type: 'start', startInfo: INFO });
});

test('every frame kind of both directions parses', () => {
  for (const f of [
    { type: 'registered', leaderId: 1, heartbeat_ms: 1000 },
    { type: 'not-leader', leader: { id: 2, address: 'ctl2:7400' } },
    { type: 'not-leader' },
    { type: 'kill', jobId: 1, run: 2, reason: 'killed by alice' },
    { type: 'status-ack', statusId: 'node01/1.2/finished' },
    { type: 'registered', leaderId: 1, heartbeat_ms: 1000, features: ['reports-batch'] },
    { type: 'status-acks', statusIds: ['node01/1.2/started', 'node01/1.2/finished'] },
  ]) {
    assert.deepEqual(parseControllerFrame(JSON.stringify(f)), f);
  }
  for (const f of [
    {
      type: 'register',
      host: 'node01',
      resources: { slots: 64, mem_bytes: 1 << 30, booleans: ['ib'], numerics: { gpu: 4 } },
      version: '0.1.0',
      running: [{ jobId: 1, run: 1, pid: 100, startedAt: 5 }],
    },
    { type: 'heartbeat', host: 'node01', seq: 3 },
    {
      type: 'status',
      host: 'node01',
      jobId: 1,
      run: 1,
      statusId: 'node01/1.1/started',
      kind: 'started',
      pid: 4242,
      time_ms: 1,
    },
    {
      type: 'status',
      host: 'node01',
      jobId: 1,
      run: 1,
      statusId: 'node01/1.1/finished',
      kind: 'finished',
      exitCode: null,
      signal: 'SIGTERM',
      reason: 'runtime limit 1h reached',
      time_ms: 2,
    },
    {
      type: 'status',
      host: 'node01',
      jobId: 1,
      run: 1,
      statusId: 'node01/1.1/launch-error',
      kind: 'launch-error',
      reason: 'execution user bob does not exist on host node01',
      time_ms: 2,
    },
    { type: 'ack', ref: 'start', jobId: 1, run: 1, outcome: 'duplicate' },
    {
      type: 'reports',
      host: 'node01',
      acks: [{ ref: 'kill', jobId: 2, run: 1, outcome: 'accepted' }],
      statuses: [{ jobId: 1, run: 1, statusId: 'node01/1.1/started', kind: 'started', pid: 7, time_ms: 1 }],
    },
  ]) {
    assert.deepEqual(parseWorkerFrame(JSON.stringify(f)), f);
  }
});

test('a bad frame is refused with an error naming the field', () => {
  assert.throws(
    () => parseControllerFrame(JSON.stringify({ type: 'start', startInfo: { ...INFO, command: [] } })),
    (e: unknown) => e instanceof WorkerFrameError && /startInfo\.command/.test(e.message),
  );
  assert.throws(
    () =>
      parseWorkerFrame(
        JSON.stringify({
          type: 'register',
          host: 'node01',
          resources: { slots: 0, mem_bytes: 1, booleans: [], numerics: {} },
          version: 'x',
          running: [],
        }),
      ),
    /resources\.slots/,
  );
  assert.throws(() => parseStartInfo({ ...INFO, launchType: 'pvm' }), /bad start info: launchType/);
  assert.throws(() => parseStartInfo({ ...INFO, extra: 1 }), /Unrecognized key/);
  assert.throws(() => parseWorkerFrame('{nope'), /worker frame is not JSON/);
  assert.throws(() => parseWorkerFrame(JSON.stringify({ type: 'hello' })), /bad worker frame: type/);
});

test('a frame above the size limit is refused before it is parsed, on both sides', () => {
  const big = 'x'.repeat(WORKER_FRAME_BYTES_MAX + 1);
  assert.throws(() => parseWorkerFrame(big), new RegExp(`exceeds the limit of ${WORKER_FRAME_BYTES_MAX} bytes`));
  assert.throws(() => encodeFrame({ type: 'kill', jobId: 1, run: 1, reason: big }), /kill frame of \d+ bytes exceeds/);
});

test('a worker proves the credential of the host it names, at its epoch, with a fresh nonce spent once', () => {
  const root = deriveClusterKeys(Buffer.from('0123456789abcdef0123456789abcdef')).workerRoot;
  const book = new ChallengeBook();
  const epochs = new Map([['node02', 3]]);
  const epochOf = (h: string) => epochs.get(h) ?? 0;
  const as = (host: string, keyHost: string, epoch = 0) => ({
    [WORKER_HEADER_HOST]: host,
    ...handshakeHeaders(hostCredentialKey(root, keyHost, epoch), 'worker', host, book.issue(), Date.now()),
  });
  const ok = as('node01', 'node01');
  assert.equal(authenticateWorker(ok, book, root, epochOf), 'node01');
  assert.throws(() => authenticateWorker(ok, book, root, epochOf), /replayed handshake/);
  assert.throws(() => authenticateWorker(as('node02', 'node01'), book, root, epochOf), /does not match .* for node02/);
  assert.throws(() => authenticateWorker(as('node02', 'node02', 2), book, root, epochOf), /does not match/);
  assert.equal(authenticateWorker(as('node02', 'node02', 3), book, root, epochOf), 'node02');
  assert.throws(() => authenticateWorker({ [WORKER_HEADER_HOST]: 'node01' }, book, root, epochOf), /ask \/challenge/);
  assert.throws(() => authenticateWorker({}, book, root, epochOf), /must name its host/);
});

test('status ids are stable per event and urls point at /worker', () => {
  assert.equal(statusIdOf('node01', 12, 2, 'finished'), 'node01/12.2/finished');
  assert.equal(toWorkerUrl('ctl1:7400'), 'ws://ctl1:7400/worker');
  assert.equal(toWorkerUrl('ws://ctl1:7400/'), 'ws://ctl1:7400/worker');
  assert.equal(toWorkerUrl('ws://ctl1:7400/api'), 'ws://ctl1:7400/worker');
});

test('several starts go in as few frames as the count limit allows, each read back as its single-job start', () => {
  const infos = Array.from({ length: STARTS_PER_FRAME_MAX + 3 }, (_, i) => ({ ...INFO, jobId: i + 1 }));
  const frames = encodeStartFrames(infos);
  assert.equal(frames.length, 2);
  const read = frames.flatMap((f) => (startsOf(f) ?? []).map((raw) => parseStartValue(raw).startInfo));
  assert.deepEqual(read, infos);
  // The single form is not a several-job frame, and still parses as before.
  const single = encodeFrame({ type: 'start', startInfo: INFO });
  assert.equal(startsOf(single), null);
  assert.deepEqual(parseControllerFrame(single), { type: 'start', startInfo: INFO });
});

test('a several-job start frame is cut below the byte limit', () => {
  const big = { ...INFO, command: ['x'.repeat(Math.floor(WORKER_FRAME_BYTES_MAX / 16))] }; // 16 fill a frame
  const infos = Array.from({ length: 40 }, (_, i) => ({ ...big, jobId: i + 1 }));
  const frames = encodeStartFrames(infos);
  assert.ok(frames.length >= 3, `${frames.length} frames`);
  for (const f of frames) assert.ok(Buffer.byteLength(f) <= WORKER_FRAME_BYTES_MAX);
  assert.equal(
    frames.reduce((n, f) => n + (startsOf(f)?.length ?? 0), 0),
    40,
  );
});

test('in a several-job start frame, a start the worker cannot read is its own launch error; the others run', () => {
  const bad = { ...INFO, jobId: 7, run: 2, command: [] };
  const frame = `{"type":"start","startInfos":[${JSON.stringify(INFO)},${JSON.stringify(bad)}]}`;
  const [good, unreadable] = startsOf(frame)!;
  assert.deepEqual(parseStartValue(good).startInfo, INFO);
  assert.throws(() => parseStartValue(unreadable), WorkerFrameError);
  const u = unreadableStartValue(unreadable);
  assert.equal(u?.jobId, 7);
  assert.equal(u?.run, 2);
  assert.match(u?.problem ?? '', /^command: /);
  // The whole frame is not a single-job start: the single-form reader neither runs nor refuses it.
  assert.throws(() => parseControllerFrame(frame), WorkerFrameError);
  assert.equal(unreadableStart(frame), null);
});

test('a several-job start frame whose list is not one is refused naming startInfos', () => {
  for (const list of [
    '[]',
    '{}',
    `[${Array(STARTS_PER_FRAME_MAX + 1)
      .fill('1')
      .join(',')}]`,
  ])
    assert.throws(() => startsOf(`{"type":"start","startInfos":${list}}`), /startInfos: a start frame carries/);
  assert.throws(
    () => startsOf(`{"type":"start","startInfo":${JSON.stringify(INFO)},"startInfos":[1]}`),
    /startInfos: a start frame carries either startInfo or startInfos/,
  );
});

test('a worker names its features in a header; unknown ones are ignored', () => {
  assert.deepEqual(
    [...workerFeatures({ [WORKER_HEADER_FEATURES]: ` ${FEATURE_START_BATCH}, later ` })],
    [FEATURE_START_BATCH, 'later'],
  );
  assert.equal(workerFeatures({}).size, 0);
});
