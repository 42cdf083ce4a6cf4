import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { OpKind, SEGMENT_HEADER_RECORD_BYTES, encodeBatch, opBytes } from './record.js';
import { SegmentWriter, listSegments, parseSegmentName, scanSegment, segmentName } from './segment.js';

const header = (seq: number, firstIndex: number) => ({
  seq,
  firstIndex,
  hardState: { term: 1, vote: 1, commit: 0 },
  base: { index: 0, term: 0 },
});

test('segment names sort by sequence and first index, and parse back', () => {
  const names = [segmentName(10, 900), segmentName(2, 30), segmentName(0, 1), segmentName(2 ** 40, 2 ** 50)];
  assert.deepEqual([...names].sort(), [
    segmentName(0, 1),
    segmentName(2, 30),
    segmentName(10, 900),
    segmentName(2 ** 40, 2 ** 50),
  ]);
  assert.deepEqual(parseSegmentName(segmentName(2, 30)), { name: segmentName(2, 30), seq: 2, firstIndex: 30 });
  assert.equal(parseSegmentName('0001-0002.wal'), undefined);
  assert.equal(parseSegmentName('LOCK'), undefined);
});

test('listSegments orders by sequence number and ignores other files', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xce-seg-'));
  try {
    for (const n of [segmentName(1, 5), segmentName(0, 1), 'LOCK', 'x.wal.tmp']) writeFileSync(join(dir, n), '');
    assert.deepEqual(
      (await listSegments(dir)).map((s) => s.seq),
      [0, 1],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a segment holds its header then whole records, and a reopen cuts bytes past the last valid one', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xce-seg-'));
  try {
    const w = await SegmentWriter.create(dir, header(3, 41));
    assert.equal(w.bytes, SEGMENT_HEADER_RECORD_BYTES);
    const op = { kind: OpKind.HardState, hardState: { term: 2, vote: 1, commit: 0 } } as const;
    const rec = encodeBatch([op], 4 + opBytes(op));
    await w.append(rec);
    await w.close();
    await assert.rejects(SegmentWriter.create(dir, header(3, 41)), /EEXIST/);
    const path = join(dir, segmentName(3, 41));
    const scan = scanSegment(readFileSync(path));
    assert.deepEqual(scan.header, header(3, 41));
    assert.equal(scan.batches.length, 1);
    assert.equal(scan.validBytes, SEGMENT_HEADER_RECORD_BYTES + rec.length);
    writeFileSync(path, Buffer.concat([readFileSync(path), Buffer.alloc(10, 9)]));
    const torn = scanSegment(readFileSync(path));
    assert.equal(torn.problem?.offset, scan.validBytes);
    assert.equal(torn.problem?.validRecordAfter, undefined);
    const r = await SegmentWriter.reopen(path, 3, 41, torn.validBytes, torn.fileBytes);
    await r.close();
    assert.equal(readFileSync(path).length, scan.validBytes);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an empty file is not a segment: the scan says a header was expected', () => {
  const scan = scanSegment(new Uint8Array(0));
  assert.equal(scan.header, undefined);
  assert.match(scan.problem!.expected, /segment header/);
});
