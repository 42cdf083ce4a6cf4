import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { FrameError, decodeFrame, encodeMessage, encodeSnapshotChunk } from './raft-codec.js';
import { MessageType, newMessage, type Message } from '../raft/message.js';
import { EntryType } from '../raft/types.js';
import { SnapshotAssembler, splitSnapshot } from '../raft/snapshot-chunks.js';

const root = new URL('../../', import.meta.url);
const schema = new URL('schema/raft.capnp', root).pathname;
const hasCapnp = spawnSync('capnp', ['--version']).status === 0;

const arbMessage: fc.Arbitrary<Message> = fc
  .record({
    type: fc.constantFrom(
      ...Object.values(MessageType).filter((v): v is MessageType => typeof v === 'number' && v !== MessageType.Snap),
    ),
    from: fc.integer({ min: 1, max: 2 ** 32 - 1 }),
    to: fc.integer({ min: 1, max: 2 ** 32 - 1 }),
    term: fc.maxSafeNat(),
    logTerm: fc.maxSafeNat(),
    index: fc.maxSafeNat(),
    commit: fc.maxSafeNat(),
    reject: fc.boolean(),
    rejectHint: fc.maxSafeNat(),
    context: fc.string({ maxLength: 40 }),
    entries: fc.array(
      fc.record({
        term: fc.maxSafeNat(),
        index: fc.maxSafeNat(),
        type: fc.constantFrom(EntryType.Normal, EntryType.ConfChange),
        data: fc.uint8Array({ maxLength: 64 }),
      }),
      { maxLength: 8 },
    ),
  })
  .map((r) => ({ ...r, entries: r.entries.map((e) => ({ ...e })), snapshot: undefined }));

test('every Raft message survives encode → decode', () => {
  fc.assert(
    fc.property(arbMessage, (m) => {
      const f = decodeFrame(encodeMessage(m));
      assert.equal(f.kind, 'message');
      if (f.kind === 'message') assert.deepEqual(f.message, m);
    }),
    { numRuns: 500 },
  );
});

test('a MsgApp encoded by the reference implementation decodes (committed fixture)', () => {
  const bytes = new Uint8Array(readFileSync(new URL('daemon/fixtures/raft-msgapp.capnp.bin', root)));
  const f = decodeFrame(bytes);
  assert.equal(f.kind, 'message');
  if (f.kind !== 'message') return;
  assert.equal(f.message.type, MessageType.App);
  assert.equal(f.message.term, 7);
  assert.equal(f.message.commit, 40);
  assert.deepEqual(
    f.message.entries.map((e) => [e.index, e.type, Buffer.from(e.data).toString('latin1')]),
    [
      [42, 0, 'fact-bytes'],
      [43, 1, '\x01\x00\x03\x00\x00\x00'],
    ],
  );
});

test(
  'our frames are read by `capnp decode`',
  {
    skip: hasCapnp
      ? false
      : 'the capnp tool (Debian capnproto) is not installed; the fixture test above covers decoding',
  },
  () => {
    const m: Message = {
      ...newMessage(MessageType.App, 2, 3, 9),
      logTerm: 8,
      index: 100,
      commit: 99,
      entries: [{ term: 9, index: 101, type: EntryType.Normal, data: new Uint8Array([1, 2, 3]) }],
      context: 'ctx',
    };
    const file = join(mkdtempSync(join(tmpdir(), 'xce-raft-codec-')), 'm.bin');
    writeFileSync(file, encodeMessage(m));
    const out = spawnSync('capnp', ['decode', '--short', schema, 'Message'], {
      input: readFileSync(file),
      encoding: 'utf8',
    });
    assert.equal(out.status, 0, out.stderr);
    assert.match(out.stdout, /type = 2, from = 2, to = 3, term = 9, logTerm = 8, index = 100/);
    assert.match(out.stdout, /entries = \[\(term = 9, index = 101, type = 0, data = "\\001\\002\\003"\)\]/);
    assert.match(out.stdout, /commit = 99/);
    assert.match(out.stdout, /context = "ctx"/);
  },
);

test('a snapshot travels as chunks and reassembles byte for byte', () => {
  const data = new Uint8Array(3000).map((_, i) => (i * 7) & 0xff);
  const snap: Message = {
    ...newMessage(MessageType.Snap, 1, 2, 5),
    snapshot: { meta: { index: 77, term: 4, conf: { voters: [1, 2, 3], learners: [4] } }, data },
  };
  const asm = new SnapshotAssembler();
  let done: Message | undefined;
  for (const c of splitSnapshot(snap, 1024)) {
    const f = decodeFrame(encodeSnapshotChunk(c));
    assert.equal(f.kind, 'chunk');
    if (f.kind !== 'chunk') return;
    const r = asm.add(f.chunk);
    if (typeof r === 'object') done = r;
    else assert.equal(r, undefined);
  }
  assert.ok(done?.snapshot);
  assert.deepEqual(done.snapshot.meta, { index: 77, term: 4, conf: { voters: [1, 2, 3], learners: [4] } });
  assert.deepEqual(done.snapshot.data, data);
});

test('garbage frames are refused with a clear error, never a crash', () => {
  assert.throws(
    () => decodeFrame(new Uint8Array([1, 2, 3])),
    (e: unknown) => e instanceof FrameError && /not a valid Raft frame/.test(e.message),
  );
  const good = encodeMessage(newMessage(MessageType.Heartbeat, 1, 2, 3));
  const bad = good.slice();
  bad[16] = 200; // the type byte of the root struct
  assert.throws(
    () => decodeFrame(bad),
    (e: unknown) => e instanceof FrameError && /unknown message type 200/.test(e.message),
  );
  assert.throws(() => encodeMessage(newMessage(MessageType.Snap, 1, 2, 3)), FrameError);
});

test('capnp-es, generated from the same schema, reads our frames field by field', async () => {
  const capnp = await import('capnp-es');
  const { Message: MessageStruct } = await import('../schema/raft.js');
  const m: Message = {
    ...newMessage(MessageType.App, 1, 3, 12),
    logTerm: 11,
    index: 500,
    commit: 499,
    reject: true,
    rejectHint: 77,
    context: 'read-7',
    entries: [{ term: 12, index: 501, type: EntryType.ConfChange, data: new Uint8Array([9, 8, 7]) }],
  };
  const root = new capnp.Message(encodeMessage(m), false).getRoot(MessageStruct);
  assert.deepEqual(
    [
      root.type,
      root.from,
      root.to,
      root.term,
      root.logTerm,
      root.index,
      root.commit,
      root.reject,
      root.rejectHint,
      root.context,
    ],
    [2, 1, 3, 12n, 11n, 500n, 499n, true, 77n, 'read-7'],
  );
  const e = root.entries.get(0);
  assert.deepEqual([e.term, e.index, e.type, [...e.data.toUint8Array()]], [12n, 501n, 1, [9, 8, 7]]);
});
