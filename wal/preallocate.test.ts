// Preallocation (WalOptions.preallocateBytes): the segment being written is zero-filled ahead of its
// last record, and recovery reads an all-zero tail as the clean end of the log, while a torn record
// in the zeros is still cut and bad bytes followed by a valid record are still refused.
import assert from 'node:assert/strict';
import { promises as fsp, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Entry, HardState } from '../raft/types.js';
import { WalCorruptionError, WalLimitError } from './errors.js';
import { scanSegment } from './segment.js';
import { type WalLogger, Wal } from './wal.js';
import { tempDirsPerTest } from '../testing/temp-dirs.js';

const tempDir = tempDirsPerTest('xce-walpre-', 'wal');

interface Captured extends WalLogger {
  readonly warnings: string[];
}
function capture(): Captured {
  const warnings: string[] = [];
  return { warnings, info: () => undefined, warn: (m) => warnings.push(m) };
}

function range(from: number, to: number, term: number, bytes = 40): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) {
    const data = new Uint8Array(bytes);
    for (let k = 0; k < bytes; k++) data[k] = (i * 7 + term * 13 + k) & 0xff;
    out.push({ index: i, term, type: 0, data });
  }
  return out;
}
const hs = (term: number, vote: number, commit: number): HardState => ({ term, vote, commit });
const strip = (es: readonly Entry[]) => es.map((e) => ({ index: e.index, term: e.term, data: [...e.data] }));

function segmentFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => n.endsWith('.wal'))
    .sort()
    .map((n) => join(dir, n));
}

const AHEAD_BYTES = 16 * 1024;

/** A WAL with preallocation holding entries 1..n, one save each, closed; returns its only segment. */
async function written(dir: string, n: number): Promise<string> {
  const { wal } = await Wal.open(dir, { logger: capture(), preallocateBytes: AHEAD_BYTES });
  for (let i = 1; i <= n; i++) await wal.save(hs(1, 1, i - 1), range(i, i, 1));
  await wal.close();
  const files = segmentFiles(dir);
  assert.equal(files.length, 1);
  return files[0]!;
}

test('records overwrite zeros written ahead of them; the zero tail reads back as the clean end', async () => {
  const dir = tempDir();
  const file = await written(dir, 20);
  const buf = await fsp.readFile(file);
  const scan = scanSegment(buf);
  assert.equal(scan.problem, undefined);
  assert.equal(scan.batches.length, 20);
  // Zeros past the records: at least AHEAD_BYTES beyond where the first record began.
  assert.ok(scan.fileBytes > scan.validBytes, `${scan.fileBytes} B file, ${scan.validBytes} B of records`);
  assert.ok(scan.fileBytes >= AHEAD_BYTES);
  assert.ok(buf.subarray(scan.validBytes).every((b) => b === 0));
  const log = capture();
  const { wal, recovered } = await Wal.open(dir, { logger: log, preallocateBytes: AHEAD_BYTES });
  assert.equal(recovered.tornTail, undefined);
  assert.deepEqual(log.warnings, []);
  assert.deepEqual(strip(recovered.entries), strip(range(1, 20, 1)));
  assert.equal(recovered.hardState.commit, 19);
  // Appending after the reopen continues right after the last record.
  await wal.save(undefined, range(21, 25, 1));
  await wal.close();
  const { wal: w3, recovered: r3 } = await Wal.open(dir, { logger: capture() });
  assert.deepEqual(strip(r3.entries), strip(range(1, 25, 1)));
  assert.equal(r3.tornTail, undefined);
  await w3.close();
});

test('a torn record written into the zeros is cut as a torn tail, and the records before it stay', async () => {
  const dir = tempDir();
  const file = await written(dir, 5);
  const { validBytes } = scanSegment(await fsp.readFile(file));
  // The first 30 bytes of a record that the crash left unfinished, where the next record goes.
  const fh = await fsp.open(file, 'r+');
  await fh.write(Buffer.alloc(30, 0x5a), 0, 30, validBytes);
  await fh.close();
  const log = capture();
  const { wal, recovered } = await Wal.open(dir, { logger: log, preallocateBytes: AHEAD_BYTES });
  assert.equal(recovered.lastIndex, 5);
  assert.equal(recovered.tornTail?.offset, validBytes);
  assert.equal(log.warnings.length, 1);
  assert.match(log.warnings[0]!, /torn tail/);
  await wal.save(undefined, range(6, 6, 1));
  await wal.close();
  const { wal: w3, recovered: r3 } = await Wal.open(dir, { logger: capture() });
  assert.deepEqual(strip(r3.entries), strip(range(1, 6, 1)));
  await w3.close();
});

test('a record zeroed out before a valid one (a lost write) is corruption, not a zero tail', async () => {
  const dir = tempDir();
  const file = await written(dir, 5);
  const buf = await fsp.readFile(file);
  const scan = scanSegment(buf);
  const third = scan.batches[2]!.offset;
  const fourth = scan.batches[3]!.offset;
  const fh = await fsp.open(file, 'r+');
  await fh.write(Buffer.alloc(fourth - third), 0, fourth - third, third);
  await fh.close();
  await assert.rejects(Wal.open(dir, { logger: capture(), preallocateBytes: AHEAD_BYTES }), WalCorruptionError);
});

test('with small segments, each rolls over at its size and its zeros are never read as records', async () => {
  const dir = tempDir();
  const segmentBytes = 8 * 1024;
  const { wal } = await Wal.open(dir, { logger: capture(), segmentBytes, preallocateBytes: 4 * 1024 });
  for (let i = 1; i <= 120; i++) await wal.save(hs(1, 1, i - 1), range(i, i, 1, 200));
  await wal.close();
  const files = segmentFiles(dir);
  assert.ok(files.length >= 3, `${files.length} segment(s)`);
  for (const f of files) {
    assert.ok(statSync(f).size <= segmentBytes, `${f}: ${statSync(f).size} B`);
    assert.equal(scanSegment(await fsp.readFile(f)).problem, undefined);
  }
  const { wal: w2, recovered } = await Wal.open(dir, { logger: capture(), segmentBytes });
  assert.deepEqual(strip(recovered.entries), strip(range(1, 120, 1, 200)));
  await w2.close();
});

test('preallocateBytes must be a whole number of bytes within the segment size bound', async () => {
  for (const bad of [-1, 1.5, Number.NaN, 2 * 1024 * 1024 * 1024]) {
    await assert.rejects(
      Wal.open(tempDir(), { logger: capture(), preallocateBytes: bad }),
      (e: unknown) => e instanceof WalLimitError && /preallocateBytes/.test(e.message),
    );
  }
});
