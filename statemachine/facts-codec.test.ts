// The facts codec writes and reads STANDARD Cap'n Proto: checked against capnp-es (the generated
// schema/facts.ts), against the reference implementation (`capnp decode` / `capnp encode`, when
// installed), and against committed fixtures made by the reference implementation, including the
// first released encoding (v0, no profile fields at all), which must read as "no profile, mode
// direct".

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import * as capnp from 'capnp-es';
import * as S from '../schema/facts.js';
import { apply } from './apply.js';
import { NESTING_DEPTH_MAX, Reader, WireError, Writer } from '../wire/capnp-wire.js';
import type { DispatchRecord } from './dispatch-record.js';
import { decodeFact, encodeFact } from './facts-codec.js';
import type { DispatchFact, Fact, SubmitFact } from './facts.js';
import type { SelectExpr } from '../model/profile-types.js';
import { jobDetails } from './queries.js';
import { configuredState } from '../testing/state-facts.js';

const schemaDir = fileURLToPath(new URL('../../schema/', import.meta.url));
const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(`${schemaDir}fixtures/${name}`));
const hasCapnp = spawnSync('capnp', ['--version']).status === 0;
const NO_CAPNP =
  "the Cap'n Proto compiler `capnp` is not installed (Debian: apt-get install capnproto); the committed fixtures cover the same property";

const RECORD: DispatchRecord = {
  profile: 'openfoam',
  profileHash: 'abc123',
  mode: 'direct',
  launchType: 'openmpi',
  resreq: {
    select: [
      {
        value: {
          kind: 'and',
          args: [
            { kind: 'bool', name: 'ib' },
            { kind: 'cmp', name: 'mem', op: '>=', value: 6.5 },
            { kind: 'not', expr: { kind: 'cmp', name: 'model', op: '==', value: 'A100' } },
          ],
        },
        origin: 'profile',
      },
    ],
    rusage: [{ value: { name: 'lic', value: 1, duration_s: 10 }, origin: 'profile' }],
    span: { value: { ptile: 2 }, origin: 'job' },
    same: { value: ['rack'], origin: 'job' },
    order: { value: [{ name: 'mem', descending: true }], origin: 'job' },
  },
  tasks: 2,
  hosts: [{ host: 'n1', tasks: 2 }],
  env: [{ value: { name: 'X', value: 'y' }, origin: 'profile' }],
  limits: { runtime_s: { value: 10, origin: 'job' }, tasks: { value: 4, origin: 'profile' } },
  profilePreExec: '/pre',
  profilePostExec: null,
  jobPreExec: null,
  jobPostExec: 'p',
};

const SUBMIT: Fact = {
  clientId: 'c-0123456789abcdef',
  sequence: 7,
  timeMs: 1764547200000,
  body: {
    kind: 'submit',
    user: 'alice',
    queue: 'normal',
    profile: 'openfoam',
    profileRequested: 'openfoam-old',
    dependency: null,
    dependencyKill: false,
    spec: {
      resreq: 'select[mem>64000]',
      tasks: 64,
      env: [
        { name: 'A', value: '1' },
        { name: 'B', value: 'é' },
      ],
      limits: { runtime_s: 3600, memory_bytes: 2 ** 40 },
      preExec: null,
      postExec: '/bin/true',
      command: ['./run.sh', '-x'],
      cwd: '/home/alice',
      stdoutPath: null,
      stderrPath: null,
      jobName: 'case1',
      script: null,
    },
  },
};

const DISPATCH: Fact = {
  clientId: null,
  sequence: 0,
  timeMs: -5,
  body: {
    kind: 'dispatch',
    jobId: 3,
    runNumber: 1,
    placement: [{ host: 'n1', tasks: 2 }],
    record: RECORD,
    schedulerHash: 'abc123',
  },
};

const ALL_FACTS: Fact[] = [
  SUBMIT,
  DISPATCH,
  { clientId: null, sequence: 0, timeMs: 1, body: { kind: 'noop' } },
  {
    clientId: 'admin',
    sequence: 1,
    timeMs: 2,
    body: { kind: 'config', files: [{ path: 'xce.yaml', text: 'name: x\n' }], user: 'root' },
  },
  {
    clientId: null,
    sequence: 0,
    timeMs: 3,
    body: { kind: 'status', jobId: 9, runNumber: 2, status: { type: 'started', pid: 77, timeMs: 5 } },
  },
  {
    clientId: null,
    sequence: 0,
    timeMs: 3,
    body: {
      kind: 'status',
      jobId: 9,
      runNumber: 2,
      status: { type: 'finished', exitCode: -1, signal: 'SIGKILL', reason: 'killed', timeMs: 2 ** 45 },
    },
  },
  {
    clientId: null,
    sequence: 0,
    timeMs: 3,
    body: { kind: 'status', jobId: 9, runNumber: 2, status: { type: 'launchError', reason: 'no such user' } },
  },
  {
    clientId: 'c',
    sequence: 2 ** 40,
    timeMs: 4,
    body: { kind: 'control', jobId: 2 ** 33, action: 'restart', user: 'bob' },
  },
  { clientId: null, sequence: 0, timeMs: 5, body: { kind: 'clean', jobIds: [1, 7, 2 ** 31, 2 ** 40 + 3] } },
  { clientId: null, sequence: 0, timeMs: 5, body: { kind: 'clean', jobIds: [] } },
  {
    clientId: null,
    sequence: 0,
    timeMs: 4,
    body: {
      kind: 'dispatch',
      jobId: 1,
      runNumber: 1,
      placement: [],
      schedulerHash: null,
      record: {
        ...RECORD,
        resreq: {
          select: [],
          rusage: [],
          span: null,
          same: null,
          order: null,
          compound: {
            kind: 'compound',
            operator: '||',
            parts: [
              {
                kind: 'simple',
                select: [{ kind: 'bool', name: 'ib' }],
                rusage: [],
                span: null,
                same: null,
                order: null,
              },
              {
                kind: 'simple',
                select: [],
                rusage: [{ name: 'mem', value: 4 }],
                span: { hosts: 1 },
                same: [],
                order: [],
              },
            ],
          },
        },
      },
    },
  },
];

test('every fact kind survives encode → decode', () => {
  for (const f of ALL_FACTS) assert.deepEqual(decodeFact(encodeFact(f)), f);
});

test('capnp-es reads the bytes this codec writes', () => {
  const msg = new capnp.Message(encodeFact(SUBMIT), false);
  const root = msg.getRoot(S.Fact);
  assert.equal(root.clientId, 'c-0123456789abcdef');
  assert.equal(root.sequence, 7n);
  assert.equal(root.which(), S.Fact.SUBMIT);
  const s = root.submit;
  assert.equal(s.user, 'alice');
  assert.equal(s.profile, 'openfoam');
  assert.equal(s.spec.tasks, 64);
  assert.equal(s.spec.limits.memoryBytes, 2n ** 40n);
  assert.deepEqual(
    s.spec.env.map((e: S.EnvVar) => [e.name, e.value]),
    [
      ['A', '1'],
      ['B', 'é'],
    ],
  );
  const d = new capnp.Message(encodeFact(DISPATCH), false).getRoot(S.Fact).dispatch;
  assert.equal(d.record.launchType, S.LaunchType.OPENMPI);
  assert.equal(d.record.resreq.select.get(0).expr.and.get(1).cmp.number, 6.5);
  assert.equal(d.record.resreq.rusage.get(0).origin, S.Origin.PROFILE);
  assert.equal(d.record.limits.get(1).kind, S.LimitKind.TASKS);
});

test('this codec reads the bytes capnp-es writes', () => {
  const msg = new capnp.Message();
  const root = msg.initRoot(S.Fact);
  root.clientId = 'c-es';
  root.sequence = 5n;
  root.timeMs = 1234n;
  const s = root._initSubmit();
  s.user = 'bob';
  s.queue = 'night';
  s.profile = 'serial';
  const spec = s._initSpec();
  spec.resreq = 'x'.repeat(20_000);
  const env = spec._initEnv(2);
  env.get(0).name = 'K';
  env.get(0).value = 'v';
  env.get(1).name = 'L';
  env.get(1).value = 'w';
  const cmd = spec._initCommand(1);
  cmd.set(0, 'sleep');
  const f = decodeFact(new Uint8Array(msg.toArrayBuffer()));
  assert.equal(f.clientId, 'c-es');
  assert.equal(f.body.kind, 'submit');
  if (f.body.kind !== 'submit') return;
  assert.equal(f.body.spec.resreq?.length, 20_000);
  assert.deepEqual(f.body.spec.env, [
    { name: 'K', value: 'v' },
    { name: 'L', value: 'w' },
  ]);
  assert.deepEqual(f.body.spec.command, ['sleep']);
  assert.equal(f.body.profileRequested, null);
});

/** The same message split in two segments: segment 0 holds only a far pointer to the root. */
function withFarRoot(single: Uint8Array, doubleFar: boolean): Uint8Array {
  const segWords = new DataView(single.buffer, single.byteOffset).getUint32(4, true);
  const seg1 = single.subarray(8, 8 + segWords * 8);
  // segment 0: the root (a far pointer); for a double far also the two-word landing pad.
  const seg0Words = doubleFar ? 3 : 1;
  const out = new Uint8Array(16 + seg0Words * 8 + seg1.length);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, 1, true); // two segments
  dv.setUint32(4, seg0Words, true);
  dv.setUint32(8, segWords, true);
  out.set(seg1, 16 + seg0Words * 8);
  if (!doubleFar) {
    // single far: lands on segment 1 word 0, the original root pointer (relative to itself).
    dv.setUint32(16, 2, true);
    dv.setUint32(20, 1, true);
  } else {
    // double far: lands on segment 0 word 1: [far pointer to the struct's content, struct tag].
    const rootLo = dv.getInt32(16 + seg0Words * 8, true);
    const contentWord = 1 + (rootLo >> 2);
    dv.setUint32(16, (1 << 3) | 4 | 2, true);
    dv.setUint32(20, 0, true);
    dv.setUint32(24, (contentWord << 3) | 2, true);
    dv.setUint32(28, 1, true);
    dv.setUint32(32, 0, true); // tag: a struct pointer with offset 0
    dv.setUint32(36, dv.getUint32(16 + seg0Words * 8 + 4, true), true);
  }
  return out;
}

test('this codec follows far pointers across segments (single and double far)', () => {
  for (const f of ALL_FACTS) {
    assert.deepEqual(decodeFact(withFarRoot(encodeFact(f), false)), f);
    assert.deepEqual(decodeFact(withFarRoot(encodeFact(f), true)), f);
  }
});

test('a deep copy (Reader.copyTo) of any fact is the bytes the codec writes, also out of a two-segment message with far pointers', () => {
  for (const f of ALL_FACTS) {
    const bytes = encodeFact(f);
    for (const source of [bytes, withFarRoot(bytes, false), withFarRoot(bytes, true)]) {
      const r = new Reader(source);
      const w = new Writer(64);
      r.copyTo(w, w.root, r.root);
      assert.deepStrictEqual(w.finish(), bytes);
    }
  }
});

test('a deep copy keeps lists of every element size: bits, bytes, words, pointers, structs, and empty ones', () => {
  const w = new Writer(64);
  const d = w.struct(w.root, 1, 6);
  w.u32(d, 0xdeadbeef);
  const bits = w.primitiveList(d + 8, 1, 11, 2); // List(Bool), 11 elements
  w.bytes[bits] = 0b1010_0101;
  w.bytes[bits + 1] = 0b101;
  const words = w.primitiveList(d + 16, 4, 3, 12); // List(UInt32)
  for (let i = 0; i < 3; i++) w.u32(words + i * 4, 1000 + i);
  const texts = w.pointerList(d + 24, 2);
  w.text(texts, 'ascii');
  w.text(texts + 8, 'ünïcode');
  let at = w.structList(d + 32, 2, 1, 1);
  for (let i = 0; i < 2; i++, at += 16) {
    w.u16(at, i + 1);
    w.text(at + 8, `e${i}`);
  }
  w.pointerList(d + 40, 0);
  w.primitiveList(d + 48, 0, 5, 0); // List(Void)
  const original = w.finish();
  const r = new Reader(original);
  const copy = new Writer(16);
  r.copyTo(copy, copy.root, r.root);
  assert.deepStrictEqual(copy.finish(), original);
  const c = new Reader(copy.finish());
  const s = c.struct(c.root)!;
  assert.deepEqual(c.u32ListAt(c.ptr(s, 1)), [1000, 1001, 1002]);
  assert.deepEqual(c.textList(c.ptr(s, 2)), ['ascii', 'ünïcode']);
});

test('a deep copy refuses what a read refuses: pointers out of bounds, nesting too deep', () => {
  const bytes = encodeFact(SUBMIT).slice();
  new DataView(bytes.buffer).setInt32(8, 1 << 20, true); // root struct pointer far past the end
  const r = new Reader(bytes);
  assert.throws(() => r.copyTo(new Writer(64), 8, r.root), WireError);
  // A `not` nested deeper than NESTING_DEPTH_MAX.
  let expr: SelectExpr = { kind: 'bool', name: 'x' };
  for (let i = 0; i < NESTING_DEPTH_MAX + 5; i++) expr = { kind: 'not', expr };
  const deep = encodeFact({
    ...DISPATCH,
    body: {
      ...(DISPATCH.body as DispatchFact),
      record: { ...RECORD, resreq: { ...RECORD.resreq, select: [{ value: expr, origin: 'job' }] } },
    },
  });
  const rd = new Reader(deep);
  assert.throws(() => rd.copyTo(new Writer(64), 8, rd.root), /nesting deeper/);
  // The refused copy left the reader's depth as it was: it can still go NESTING_DEPTH_MAX deep.
  for (let i = 0; i < NESTING_DEPTH_MAX; i++) rd.enter(0);
  // A Text (copied without the general path) out of bounds.
  const w = new Writer(64);
  w.text(w.struct(w.root, 0, 1), 'a text');
  const text = w.finish().slice();
  const view = new DataView(text.buffer);
  view.setUint32(20, (view.getUint32(20, true) & 7) | (4096 << 3), true); // its length: 4,096 bytes
  const rt = new Reader(text);
  assert.throws(() => rt.copyTo(new Writer(64), 8, rt.root), /out of bounds/);
});

test('texts that share their length and both ends still decode to themselves (the intern table compares them in full)', () => {
  // Same length, same first and last 8 bytes: the same intern slot, told apart by the middle.
  const texts: string[] = [];
  for (let i = 0; i < 40; i++)
    texts.push(`prefix--${String.fromCharCode(65 + i)}${'m'.repeat(i % 3)}--suffix`.slice(0, 20));
  for (let n = 1; n <= 70; n++) texts.push('x'.repeat(n), `${'y'.repeat(n - 1)}z`, `é${'a'.repeat(n)}`);
  for (let round = 0; round < 3; round++) {
    for (const t of texts) {
      const f: Fact = { ...SUBMIT, body: { ...(SUBMIT.body as SubmitFact), user: t, queue: t.toUpperCase() } };
      const d = decodeFact(encodeFact(f));
      assert.equal(d.body.kind === 'submit' && d.body.user, t);
      assert.equal(d.body.kind === 'submit' && d.body.queue, t.toUpperCase());
    }
  }
});

test(
  'the reference implementation (capnp decode / encode) reads and writes the same facts',
  { skip: hasCapnp ? false : NO_CAPNP },
  () => {
    for (const f of ALL_FACTS) {
      const text = spawnSync('capnp', ['decode', `${schemaDir}facts.capnp`, 'Fact'], {
        input: encodeFact(f),
        encoding: 'utf8',
      });
      assert.equal(text.status, 0, text.stderr);
      const back = spawnSync('capnp', ['encode', `${schemaDir}facts.capnp`, 'Fact'], { input: text.stdout });
      assert.equal(back.status, 0, String(back.stderr));
      assert.deepEqual(decodeFact(new Uint8Array(back.stdout)), f);
    }
  },
);

test(
  'the reference implementation reads the two-segment message too (so the test builds it right)',
  { skip: hasCapnp ? false : NO_CAPNP },
  () => {
    // Only the single far pointer: `capnp decode`'s format sniffing refuses a double-far root.
    const r = spawnSync('capnp', ['decode', `${schemaDir}facts.capnp`, 'Fact'], {
      input: withFarRoot(encodeFact(SUBMIT), false),
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /profileRequested = "openfoam-old"/);
  },
);

test('committed fixtures made by the reference implementation decode to the expected facts', () => {
  assert.deepEqual(decodeFact(fixture('v1-submit.bin')), SUBMIT);
  assert.deepEqual(decodeFact(fixture('v1-dispatch.bin')), DISPATCH);
});

test('a v0 submit (no profile fields at all) decodes as no profile and runs in mode direct', () => {
  const f = decodeFact(fixture('v0-submit.bin'));
  assert.equal(f.body.kind, 'submit');
  if (f.body.kind !== 'submit') return;
  assert.equal(f.body.profile, null);
  assert.equal(f.body.profileRequested, null);
  assert.equal(f.body.spec.resreq, 'select[mem>1000]');
  assert.deepEqual(f.body.spec.command, ['./run.sh', '--fast']);

  // Replayed into a state: the job has no profile; its details say mode direct.
  const state = configuredState(1);
  assert.deepEqual(apply(state, fixture('v0-submit.bin'), 2), { kind: 'submitted', jobId: 1 });
  const pending = jobDetails(state, 1)!;
  assert.equal(pending.profile.display, '(none)');
  assert.equal(pending.mode, 'direct');
  assert.equal(pending.launchType, 'serial');

  // A v0 dispatch (no record, no scheduler hash) runs it with a record of no profile, mode direct.
  const d = decodeFact(fixture('v0-dispatch.bin'));
  assert.equal(d.body.kind === 'dispatch' && d.body.record, null);
  assert.deepEqual(apply(state, fixture('v0-dispatch.bin'), 3), { kind: 'dispatched', jobId: 1, runNumber: 1 });
  const running = jobDetails(state, 1)!;
  assert.equal(running.record!.profile, null);
  assert.equal(running.record!.profileHash, null);
  assert.equal(running.mode, 'direct');
  assert.equal(running.profileChangedSinceDispatch, false);
  assert.deepEqual(running.resreq, [{ section: 'select', text: 'select[mem>1000]', origin: 'job' }]);
});

test(
  'the v0 fixtures are what the v0 schema encodes (regenerates them when capnp is installed)',
  { skip: hasCapnp ? false : NO_CAPNP },
  () => {
    for (const name of ['v0-submit', 'v0-dispatch']) {
      const txt = readFileSync(`${schemaDir}fixtures/${name}.txt`);
      const r = spawnSync('capnp', ['encode', `${schemaDir}fixtures/facts-v0.capnp`, 'Fact'], { input: txt });
      assert.equal(r.status, 0, String(r.stderr));
      assert.deepEqual(new Uint8Array(r.stdout), fixture(`${name}.bin`));
    }
  },
);

test('corrupt or hostile bytes are refused with a WireError, never read out of range', () => {
  const good = encodeFact(SUBMIT);
  for (let cut = 0; cut < good.length; cut += 8) {
    assert.throws(() => decodeFact(good.subarray(0, cut)), WireError, `truncated at ${cut}`);
  }
  // A root pointer far outside the message.
  const bad = good.slice();
  new DataView(bad.buffer).setInt32(8, (1_000_000 << 2) | 0, true);
  assert.throws(() => decodeFact(bad), WireError);
  // A list that points at itself many times (amplification) is stopped by the traversal limit.
  const w = new Writer();
  const d = w.struct(w.root, 3, 2);
  w.u16(d + 16, 2); // submit
  const p = w.struct(d + 32, 0, 5);
  const spec = w.struct(p + 16, 1, 10);
  const cmd = w.pointerList(spec + 8 + 40, 1);
  w.text(cmd, 'x'.repeat(64));
  const amp = w.finish();
  // rewrite the command list pointer to have 2^20 elements all pointing at the same Text
  const dv = new DataView(amp.buffer);
  const listPtr = 8 + (spec - 8) + 8 + 40;
  dv.setUint32(listPtr + 4, 6 | ((1 << 20) << 3), true);
  assert.throws(() => decodeFact(amp), WireError);
});
