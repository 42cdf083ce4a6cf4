import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Entry } from '../raft/types.js';
import {
  type Op,
  OpKind,
  RECORD_HEADER_BYTES,
  anyValidRecordAfter,
  decodeBatch,
  decodeSegmentHeader,
  encodeBatch,
  encodeSegmentHeader,
  isFrameProblem,
  opBytes,
  readFrame,
} from './record.js';

const entry = (index: number, term: number, text: string): Entry => ({
  index,
  term,
  type: 0,
  data: new TextEncoder().encode(text),
});

function batch(ops: Op[]): Buffer {
  return encodeBatch(ops, 4 + ops.reduce((n, op) => n + opBytes(op), 0));
}

test('a batch of entries, a hard state and a snapshot mark reads back as written', () => {
  const ops: Op[] = [
    { kind: OpKind.SnapshotMark, base: { index: 9, term: 2 } },
    { kind: OpKind.Entries, entries: [entry(10, 3, 'a'), entry(11, 3, ''), entry(12, 4, 'ccc')] },
    { kind: OpKind.HardState, hardState: { term: 4, vote: 2, commit: 2 ** 40 } },
  ];
  const rec = batch(ops);
  const fr = readFrame(rec, 0, rec.length);
  assert.ok(!isFrameProblem(fr));
  assert.equal(fr.end, rec.length);
  const back = decodeBatch(rec, fr);
  assert.ok(Array.isArray(back));
  assert.deepEqual(
    back.map((op) =>
      op.kind === OpKind.Entries ? { ...op, entries: op.entries.map((e) => ({ ...e, data: [...e.data] })) } : op,
    ),
    ops.map((op) =>
      op.kind === OpKind.Entries ? { ...op, entries: op.entries.map((e) => ({ ...e, data: [...e.data] })) } : op,
    ),
  );
});

test('a segment header reads back as written', () => {
  const h = {
    seq: 7,
    firstIndex: 2 ** 33 + 5,
    hardState: { term: 3, vote: 1, commit: 99 },
    base: { index: 50, term: 2 },
  };
  const rec = encodeSegmentHeader(h);
  const fr = readFrame(rec, 0, rec.length);
  assert.ok(!isFrameProblem(fr));
  assert.deepEqual(decodeSegmentHeader(rec, fr), h);
});

test('every single flipped bit of a record is caught', () => {
  const rec = batch([{ kind: OpKind.Entries, entries: [entry(1, 1, 'hello, world')] }]);
  for (let bit = 0; bit < rec.length * 8; bit++) {
    const bad = Buffer.from(rec);
    bad[bit >> 3]! ^= 1 << (bit & 7);
    const fr = readFrame(bad, 0, bad.length);
    assert.ok(isFrameProblem(fr), `bit ${bit} went unnoticed`);
  }
});

test('a record cut short says how many bytes it expected and found', () => {
  const rec = batch([{ kind: OpKind.Entries, entries: [entry(1, 1, 'x'.repeat(100))] }]);
  const fr = readFrame(rec, 0, rec.length - 10);
  assert.ok(isFrameProblem(fr));
  assert.match(fr.expected, /payload byte/);
  const hdr = readFrame(rec, 0, RECORD_HEADER_BYTES - 1);
  assert.ok(isFrameProblem(hdr));
  assert.match(hdr.expected, /header/);
});

test('a zeroed header is refused for its type, not read as an empty record', () => {
  const fr = readFrame(new Uint8Array(64), 0, 64);
  assert.ok(isFrameProblem(fr));
  assert.match(fr.found, /type 0/);
});

test('anyValidRecordAfter finds a valid record behind garbage, and nothing behind zeros', () => {
  const rec = batch([{ kind: OpKind.HardState, hardState: { term: 1, vote: 1, commit: 0 } }]);
  const buf = Buffer.concat([Buffer.alloc(37, 0xee), rec, Buffer.alloc(20)]);
  assert.equal(anyValidRecordAfter(buf, 0, buf.length), 37);
  assert.equal(anyValidRecordAfter(Buffer.alloc(200), 0, 200), undefined);
});

test('a batch whose ops overrun the record is refused with what was missing', () => {
  const rec = batch([{ kind: OpKind.Entries, entries: [entry(1, 1, 'abc')] }]);
  // Claim two ops in a payload holding one, and re-seal the CRC so only the content is wrong.
  rec.writeUInt32LE(2, RECORD_HEADER_BYTES);
  const fr = { type: rec[8]!, payloadStart: RECORD_HEADER_BYTES, end: rec.length };
  const back = decodeBatch(rec, fr);
  assert.ok(!Array.isArray(back));
  assert.match(back.expected, /op kind/);
});
