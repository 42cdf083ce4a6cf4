import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, promises as fsp, readdirSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Entry, HardState } from '../raft/types.js';
import {
  DataDirLockedError,
  WalClosedError,
  WalCorruptionError,
  WalFailedError,
  WalGapError,
  WalInvalidSaveError,
  WalLimitError,
  WalMissingSegmentError,
  WalVersionError,
} from './errors.js';
import { crc32cUpdate } from './crc32c.js';
import { ENTRY_DATA_BYTES_MAX } from './limits.js';
import { LOCK_FILE_NAME } from './lock.js';
import { SEGMENT_HEADER_RECORD_BYTES } from './record.js';
import { scanSegment } from './segment.js';
import { type WalLogger, type WalOptions, Wal, entriesAfterSnapshot } from './wal.js';
import { tempDirsPerTest } from '../testing/temp-dirs.js';

const tempDir = tempDirsPerTest('xce-wal-', 'wal');

interface Captured extends WalLogger {
  readonly warnings: string[];
}
function capture(): Captured {
  const warnings: string[] = [];
  return { warnings, info: () => undefined, warn: (m) => warnings.push(m) };
}

const enc = new TextEncoder();
function ent(index: number, term: number, bytes = 20): Entry {
  const data = new Uint8Array(bytes);
  for (let k = 0; k < bytes; k++) data[k] = (index * 7 + term * 13 + k) & 0xff;
  return { index, term, type: 0, data };
}
function range(from: number, to: number, term: number, bytes = 20): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) out.push(ent(i, term, bytes));
  return out;
}
const hs = (term: number, vote: number, commit: number): HardState => ({ term, vote, commit });
const strip = (es: readonly Entry[]) =>
  es.map((e) => ({ index: e.index, term: e.term, type: e.type, data: [...e.data] }));

async function reopen(dir: string, opts: WalOptions = {}) {
  return Wal.open(dir, { logger: capture(), ...opts });
}

/** Opens a WAL in a fresh directory, lets `write` save to it, closes it, and returns what a reopen recovers. */
async function roundTrip(write: (wal: Wal) => Promise<void>): Promise<Awaited<ReturnType<typeof reopen>>['recovered']> {
  const dir = tempDir();
  const { wal } = await reopen(dir);
  await write(wal);
  await wal.close();
  const { wal: again, recovered } = await reopen(dir);
  await again.close();
  return recovered;
}

function segmentFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => n.endsWith('.wal'))
    .sort()
    .map((n) => join(dir, n));
}

test('an empty directory opens as an empty log with one segment, and reopens the same', async () => {
  const dir = tempDir();
  const { wal, recovered } = await reopen(dir);
  assert.deepEqual(recovered.hardState, hs(0, 0, 0));
  assert.deepEqual(recovered.entries, []);
  assert.equal(recovered.firstIndex, 1);
  assert.equal(recovered.lastIndex, 0);
  assert.equal(segmentFiles(dir).length, 1);
  await wal.close();
  const again = await reopen(dir);
  assert.equal(again.recovered.lastIndex, 0);
  await again.wal.close();
});

test('a directory with only a hard state reads back that hard state and no entry', async () => {
  const recovered = await roundTrip(async (wal) => {
    await wal.save(hs(3, 2, 0), []);
  });
  assert.deepEqual(recovered.hardState, hs(3, 2, 0));
  assert.equal(recovered.entries.length, 0);
});

test('saved entries and the latest hard state are read back after reopening', async () => {
  const recovered = await roundTrip(async (wal) => {
    await wal.save(hs(1, 1, 0), range(1, 10, 1));
    await wal.save(hs(2, 1, 5), range(11, 12, 2));
  });
  assert.deepEqual(strip(recovered.entries), strip([...range(1, 10, 1), ...range(11, 12, 2)]));
  assert.deepEqual(recovered.hardState, hs(2, 1, 5));
  assert.equal(recovered.firstIndex, 1);
  assert.equal(recovered.lastIndex, 12);
});

test('a conflicting suffix is replaced by the new entries, durably, in one save', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir);
  await wal.save(hs(1, 1, 2), range(1, 6, 1));
  await wal.save(hs(2, 3, 2), range(4, 5, 2)); // follower overwritten from index 4 by a new leader
  assert.equal(wal.lastIndex, 5);
  await wal.close();
  const { wal: w2, recovered } = await reopen(dir);
  assert.deepEqual(strip(recovered.entries), strip([...range(1, 3, 1), ...range(4, 5, 2)]));
  // The log continues after the replaced suffix.
  await w2.save(undefined, range(6, 6, 2));
  await w2.close();
  const { wal: w3, recovered: r3 } = await reopen(dir);
  assert.equal(r3.lastIndex, 6);
  assert.equal(r3.entries[5]!.term, 2);
  await w3.close();
});

test('a truncation queued behind the entries it replaces, in one group commit, is replayed in order', async () => {
  const recovered = await roundTrip(async (wal) => {
    const a = wal.save(hs(1, 1, 0), range(1, 5, 1));
    const b = wal.save(hs(2, 2, 0), range(3, 4, 2));
    const c = wal.save(undefined, range(5, 5, 2));
    await Promise.all([a, b, c]);
  });
  assert.deepEqual(strip(recovered.entries), strip([...range(1, 2, 1), ...range(3, 5, 2)]));
  assert.deepEqual(recovered.hardState, hs(2, 2, 0));
});

test('a save larger than one record is split across records (and segments) and reads back whole', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir, { segmentBytes: 8 * 1024 * 1024 });
  const big = [1, 2, 3].map((i) => ent(i, 1, 7 * 1024 * 1024));
  await wal.save(hs(1, 1, 0), big);
  await wal.close();
  // Two 7 MiB entries fill one 16 MiB record; the third needs a second record, in a second segment.
  const files = segmentFiles(dir);
  assert.equal(files.length, 2);
  for (const f of files) assert.equal(scanSegment(await fsp.readFile(f)).batches.length, 1);
  const { wal: w2, recovered } = await reopen(dir, { segmentBytes: 8 * 1024 * 1024 });
  assert.equal(recovered.lastIndex, 3);
  for (const e of recovered.entries) assert.ok(Buffer.from(e.data).equals(Buffer.from(big[e.index - 1]!.data)));
  await w2.close();
});

test('save refuses a gap, a committed entry rewritten, a term going back and a second vote in one term', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir);
  await wal.save(hs(2, 1, 3), range(1, 5, 2));
  await assert.rejects(
    wal.save(undefined, range(7, 8, 2)),
    (e) => e instanceof WalInvalidSaveError && /gap/.test(e.message),
  );
  await assert.rejects(
    wal.save(undefined, range(3, 4, 3)),
    (e) => e instanceof WalInvalidSaveError && /committed entry 3/.test(e.message),
  );
  await assert.rejects(
    wal.save(hs(1, 1, 3), []),
    (e) => e instanceof WalInvalidSaveError && /term 1 is below/.test(e.message),
  );
  await assert.rejects(wal.save(hs(2, 3, 3), []), (e) => e instanceof WalInvalidSaveError && /vote/.test(e.message));
  await assert.rejects(wal.save(undefined, [ent(6, 2), ent(8, 2)]), WalInvalidSaveError);
  // Entries that repeat committed ones unchanged are accepted (a re-sent append).
  await wal.save(undefined, range(4, 6, 2));
  assert.equal(wal.lastIndex, 6);
  await wal.close();
});

test('an entry over ENTRY_DATA_BYTES_MAX is refused with the limit named', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir);
  const big: Entry = { index: 1, term: 1, type: 0, data: new Uint8Array(ENTRY_DATA_BYTES_MAX + 1) };
  await assert.rejects(
    wal.save(undefined, [big]),
    (e) => e instanceof WalLimitError && /ENTRY_DATA_BYTES_MAX/.test(e.message),
  );
  await wal.close();
});

test('group commit: saves made while an fdatasync is in flight share the next record', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir);
  const saves: Promise<void>[] = [];
  for (let i = 1; i <= 200; i++) saves.push(wal.save(undefined, [ent(i, 1)]));
  await Promise.all(saves);
  await wal.close();
  const scan = scanSegment(await fsp.readFile(segmentFiles(dir)[0]!));
  assert.equal(scan.problem, undefined);
  // The first save goes out alone; the 199 queued behind its fdatasync go out together.
  assert.ok(scan.batches.length < 200 / 4, `${scan.batches.length} records for 200 saves`);
  const { wal: w2, recovered } = await reopen(dir);
  assert.equal(recovered.lastIndex, 200);
  await w2.close();
});

test('with syncOnEventLoop the WAL saves, groups and reads back the same', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir, { syncOnEventLoop: true, segmentBytes: 4096 });
  await Promise.all(range(1, 50, 1, 200).map((e) => wal.save(hs(1, 1, 0), [e])));
  await wal.close();
  const { wal: w2, recovered } = await reopen(dir, { segmentBytes: 4096 });
  assert.deepEqual(strip(recovered.entries), strip(range(1, 50, 1, 200)));
  await w2.close();
});

test('a save resolves only once durable: every resolved save is on disk when read by another reader', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir);
  for (let i = 1; i <= 20; i++) {
    await wal.save(hs(1, 1, i - 1), [ent(i, 1)]);
    // Read the files as they are now, without closing the WAL.
    const last = scanSegment(await fsp.readFile(segmentFiles(dir).at(-1)!));
    assert.equal(last.problem, undefined);
    const lastOp = last.batches.at(-1)!.ops.find((o) => 'entries' in o);
    assert.ok(lastOp && 'entries' in lastOp && lastOp.entries.at(-1)!.index === i);
  }
  await wal.close();
});

test('segments roll over: a batch that would cross the boundary starts the next segment, and reading spans segments', async () => {
  const dir = tempDir();
  const segmentBytes = 4096;
  const { wal } = await reopen(dir, { segmentBytes });
  for (let i = 1; i <= 60; i++) await wal.save(hs(1, 1, i - 1), [ent(i, 1, 300)]);
  await wal.close();
  const files = segmentFiles(dir);
  assert.ok(files.length >= 5, `${files.length} segments`);
  for (const f of files) {
    const size = statSync(f).size;
    assert.ok(size <= segmentBytes, `${f} holds ${size} B > ${segmentBytes}`);
    const scan = scanSegment(await fsp.readFile(f));
    assert.equal(scan.problem, undefined, `${f}: every record whole within its file`);
  }
  // File names sort by sequence and carry the first index of each segment.
  const firsts = files.map((f) => parseInt(f.slice(-20, -4), 16));
  assert.deepEqual(
    [...firsts].sort((a, b) => a - b),
    firsts,
  );
  assert.equal(firsts[0], 1);
  const { wal: w2, recovered } = await reopen(dir, { segmentBytes });
  assert.deepEqual(strip(recovered.entries), strip(range(1, 60, 1, 300)));
  assert.deepEqual(recovered.hardState, hs(1, 1, 59));
  await w2.close();
});

test('a record larger than the segment size gets a segment of its own', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir, { segmentBytes: 4096 });
  await wal.save(undefined, [ent(1, 1, 100)]);
  await wal.save(undefined, [ent(2, 1, 10_000)]);
  await wal.save(undefined, [ent(3, 1, 100)]);
  await wal.close();
  const files = segmentFiles(dir);
  assert.equal(files.length, 3);
  assert.ok(statSync(files[1]!).size > 10_000);
  const { wal: w2, recovered } = await reopen(dir, { segmentBytes: 4096 });
  assert.deepEqual(strip(recovered.entries), strip([ent(1, 1, 100), ent(2, 1, 10_000), ent(3, 1, 100)]));
  await w2.close();
});

test('compaction deletes segments wholly below the snapshot, never the active one, and the hard state survives', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir, { segmentBytes: 4096 });
  await wal.save(hs(5, 2, 0), []);
  for (let i = 1; i <= 40; i++) await wal.save(undefined, [ent(i, 5, 300)]);
  const before = segmentFiles(dir).length;
  assert.equal(await wal.compact(0), 0);
  const removed = await wal.compact(20);
  assert.ok(removed > 0 && removed < before);
  assert.equal(segmentFiles(dir).length, before - removed);
  assert.equal(await wal.compact(1000), before - removed - 1);
  assert.equal(segmentFiles(dir).length, 1);
  await wal.close();
  const { wal: w2, recovered } = await reopen(dir, { segmentBytes: 4096 });
  assert.deepEqual(recovered.hardState, hs(5, 2, 0));
  assert.equal(recovered.lastIndex, 40);
  assert.ok(recovered.firstIndex > 20);
  assert.deepEqual(strip(recovered.entries), strip(range(recovered.firstIndex, 40, 5, 300)));
  await w2.close();
});

test('a snapshot mark past the log replaces it, so the next save starts after the snapshot', async () => {
  const recovered = await roundTrip(async (wal) => {
    await wal.save(hs(1, 1, 2), range(1, 5, 1));
    await assert.rejects(wal.save(undefined, range(101, 101, 3)), WalInvalidSaveError);
    await wal.saveSnapshot({ index: 100, term: 3 });
    await wal.save(hs(3, 0, 100), range(101, 102, 3));
  });
  assert.deepEqual(recovered.snapshot, { index: 100, term: 3 });
  assert.equal(recovered.firstIndex, 101);
  assert.deepEqual(strip(recovered.entries), strip(range(101, 102, 3)));
});

test('a snapshot mark inside the log keeps the entries after it', async () => {
  const recovered = await roundTrip(async (wal) => {
    await wal.save(hs(1, 1, 8), range(1, 10, 1));
    await wal.saveSnapshot({ index: 6, term: 1 });
  });
  assert.equal(recovered.firstIndex, 7);
  assert.deepEqual(strip(recovered.entries), strip(range(7, 10, 1)));
});

test('a torn tail is cut and reported with file and offset, and a record appended after the cut reads back', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir);
  await wal.save(hs(1, 1, 0), range(1, 3, 1));
  await wal.save(undefined, range(4, 4, 1, 500));
  await wal.close();
  const file = segmentFiles(dir)[0]!;
  const size = statSync(file).size;
  // A crash in the middle of the last write: only part of its record reached the disk.
  await fsp.truncate(file, size - 200);
  const log = capture();
  const { wal: w2, recovered } = await Wal.open(dir, { logger: log });
  assert.equal(recovered.lastIndex, 3);
  assert.ok(recovered.tornTail);
  assert.equal(recovered.tornTail.file, file);
  assert.equal(log.warnings.length, 1);
  assert.match(
    log.warnings[0]!,
    new RegExp(`torn tail .*${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} at offset \\d+`),
  );
  await w2.save(undefined, range(4, 5, 1, 50));
  await w2.close();
  const { wal: w3, recovered: r3 } = await reopen(dir);
  assert.deepEqual(strip(r3.entries), strip([...range(1, 3, 1), ...range(4, 5, 1, 50)]));
  assert.equal(r3.tornTail, undefined);
  await w3.close();
});

test('garbage after the last record (a write whose bytes never all landed) is a torn tail too', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir);
  await wal.save(undefined, range(1, 3, 1));
  await wal.close();
  const file = segmentFiles(dir)[0]!;
  const whole = statSync(file).size;
  await fsp.appendFile(file, Buffer.alloc(3000, 0x5a)); // bytes of a write that never all landed
  const { wal: w2, recovered } = await reopen(dir);
  assert.equal(recovered.lastIndex, 3);
  assert.equal(recovered.tornTail?.bytesCut, 3000);
  await w2.close();
  assert.equal(statSync(file).size, whole);
  assert.equal(scanSegment(await fsp.readFile(file)).problem, undefined);
});

test('a new segment whose header never fully landed is removed, and the previous one continues', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir);
  await wal.save(undefined, range(1, 3, 1));
  await wal.close();
  const torn = join(dir, '0000000000000001-0000000000000004.wal');
  writeFileSync(torn, Buffer.alloc(SEGMENT_HEADER_RECORD_BYTES - 5, 1));
  const { wal: w2, recovered } = await reopen(dir);
  assert.equal(recovered.lastIndex, 3);
  assert.equal(segmentFiles(dir).length, 1);
  await w2.save(undefined, range(4, 4, 1));
  await w2.close();
});

/** Builds a closed WAL of several segments and returns its directory and files. */
async function multiSegmentLog(): Promise<{ dir: string; files: string[] }> {
  const dir = tempDir();
  const { wal } = await reopen(dir, { segmentBytes: 16384 });
  for (let i = 1; i <= 120; i++) await wal.save(hs(1, 1, Math.max(0, i - 2)), [ent(i, 1, 400)]);
  await wal.close();
  const files = segmentFiles(dir);
  assert.ok(files.length >= 3);
  return { dir, files };
}

async function assertRefused(dir: string, file: string, offset?: number): Promise<WalCorruptionError> {
  let caught: unknown;
  try {
    const { wal } = await reopen(dir, { segmentBytes: 16384 });
    await wal.close();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof WalCorruptionError, `expected WalCorruptionError, got ${String(caught)}`);
  assert.equal(caught.file, file);
  if (offset !== undefined) assert.equal(caught.offset, offset);
  assert.match(caught.message, new RegExp(`offset ${caught.offset}`));
  assert.match(caught.message, /expected .*found/);
  assert.match(caught.message, /remove it/);
  assert.match(caught.message, /snapshot/);
  return caught;
}

test('a flipped bit in a record of a middle segment is refused, naming the file and offset', async () => {
  const { dir, files } = await multiSegmentLog();
  const buf = await fsp.readFile(files[1]!);
  const scan = scanSegment(buf);
  const at = scan.batches[3]!.offset;
  buf[at + 20]! ^= 0x10;
  await fsp.writeFile(files[1]!, buf);
  const e = await assertRefused(dir, files[1]!, at);
  assert.match(e.message, /CRC-32C/);
});

test('a flipped bit in the last segment, with valid records after it, is corruption and not a torn tail', async () => {
  const { dir, files } = await multiSegmentLog();
  const last = files.at(-1)!;
  const buf = await fsp.readFile(last);
  const scan = scanSegment(buf);
  assert.ok(scan.batches.length >= 3);
  const at = scan.batches[1]!.offset;
  buf[at + 30]! ^= 0x01;
  await fsp.writeFile(last, buf);
  const e = await assertRefused(dir, last, at);
  assert.match(e.message, /valid record follows/);
});

test('a middle segment truncated mid-record is refused', async () => {
  const { dir, files } = await multiSegmentLog();
  await fsp.truncate(files[1]!, statSync(files[1]!).size - 100);
  await assertRefused(dir, files[1]!);
});

test('a zeroed 4 KiB page in the middle of the log is refused', async () => {
  const { dir, files } = await multiSegmentLog();
  const buf = await fsp.readFile(files[0]!);
  buf.fill(0, 4096, 8192);
  await fsp.writeFile(files[0]!, buf);
  const e = await assertRefused(dir, files[0]!);
  assert.ok(e.offset <= 4096 && e.offset > 0);
});

test('a zeroed page inside the last segment with records after it is refused', async () => {
  const { dir, files } = await multiSegmentLog();
  const last = files.at(-1)!;
  const buf = await fsp.readFile(last);
  assert.ok(buf.length > 3 * 1024);
  buf.fill(0, 512, 1536);
  await fsp.writeFile(last, buf);
  await assertRefused(dir, last);
});

test('a segment missing from the middle is refused, naming the missing sequence number', async () => {
  const { dir, files } = await multiSegmentLog();
  await fsp.unlink(files[1]!);
  await assert.rejects(reopen(dir, { segmentBytes: 16384 }), (e) => {
    assert.ok(e instanceof WalMissingSegmentError);
    assert.match(e.message, /sequence number 1 \(0000000000000001-\*\.wal\)/);
    assert.match(e.message, /remove it/);
    return true;
  });
});

test('a lost first segment is caught against the snapshot: the entries after it are missing', async () => {
  const { dir, files } = await multiSegmentLog();
  await fsp.unlink(files[0]!);
  const { wal, recovered } = await reopen(dir, { segmentBytes: 16384 });
  await wal.close();
  assert.ok(recovered.firstIndex > 1);
  assert.throws(
    () => entriesAfterSnapshot(dir, recovered, 0),
    (e) => e instanceof WalGapError && /entries 1\.\.\d+ are missing/.test(e.message),
  );
  // With a snapshot that covers them, the log is whole: the entries after the snapshot are returned.
  const after = entriesAfterSnapshot(dir, recovered, recovered.firstIndex + 2);
  assert.equal(after[0]!.index, recovered.firstIndex + 3);
  assert.equal(after.at(-1)!.index, 120);
});

test('a segment whose header disagrees with its predecessor is refused', async () => {
  const { dir, files } = await multiSegmentLog();
  // Swap in a copy of the first segment under the second one's name: the sequence and index disagree.
  const name1 = files[1]!;
  await fsp.copyFile(files[0]!, name1);
  await assertRefused(dir, name1, 0);
});

test('a segment of a newer format version is refused as such and left untouched, even alone', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir);
  await wal.close();
  const file = segmentFiles(dir)[0]!;
  const buf = await fsp.readFile(file);
  buf.writeUInt16LE(2, 12 + 4); // the format version field of the header payload
  buf.writeUInt32LE(crc32cUpdate(0, buf, 4, buf.length), 0); // a whole, valid record
  await fsp.writeFile(file, buf);
  await assert.rejects(
    reopen(dir),
    (e) => e instanceof WalVersionError && /version 2/.test(e.message) && /another release/.test(e.message),
  );
  assert.ok((await fsp.readFile(file)).equals(buf));
});

test('a whole record (valid CRC) with impossible content in the last position is corruption, not a torn tail', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir);
  await wal.save(hs(1, 1, 0), range(1, 3, 1));
  await wal.close();
  const file = segmentFiles(dir)[0]!;
  const buf = await fsp.readFile(file);
  const at = scanSegment(buf).batches.at(-1)!.offset;
  // Rewrite the last record's run to start at index 9 (a gap) and re-seal its CRC.
  buf.writeUInt32LE(9, at + 12 + 4 + 1);
  buf.writeUInt32LE(crc32cUpdate(0, buf, at + 4, buf.length), at);
  await fsp.writeFile(file, buf);
  await assertRefused(dir, file, at);
});

test('a second open of one directory is refused while the first holds it, and allowed after close', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir);
  await assert.rejects(
    reopen(dir),
    (e) => e instanceof DataDirLockedError && new RegExp(`pid ${process.pid}`).test(e.message),
  );
  await wal.close();
  const { wal: w2 } = await reopen(dir);
  await w2.close();
});

test('a lock left by a dead process is broken and reported', async () => {
  const dir = tempDir();
  await fsp.mkdir(dir, { recursive: true });
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  const deadPid = Number(child.stdout);
  writeFileSync(
    join(dir, LOCK_FILE_NAME),
    JSON.stringify({ pid: deadPid, startTicks: 1, host: hostname(), since: 'then' }),
  );
  const log = capture();
  const { wal } = await Wal.open(dir, { logger: log });
  assert.ok(log.warnings.some((w) => w.includes(`pid ${deadPid} is no longer running`)));
  await wal.close();
});

test('a closed WAL refuses saves', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir);
  await wal.close();
  await assert.rejects(wal.save(undefined, [ent(1, 1)]), WalClosedError);
});

test('close waits for saves in flight', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir);
  const saves = [
    wal.save(undefined, [ent(1, 1)]),
    wal.save(undefined, [ent(2, 1)]),
    wal.save(hs(1, 0, 1), [ent(3, 1)]),
  ];
  await wal.close();
  await Promise.all(saves);
  const { wal: w2, recovered } = await reopen(dir);
  assert.equal(recovered.lastIndex, 3);
  await w2.close();
});

test('a failed write stops the WAL for good: the save in flight and every later one are refused', async () => {
  const dir = tempDir();
  const log = capture();
  const { wal } = await Wal.open(dir, { logger: log });
  await wal.save(undefined, [ent(1, 1)]);
  // Pull the file descriptor from under the writer, as a dying disk would fail the write.
  closeSync((wal as unknown as { active: { fd: number } }).active.fd);
  await assert.rejects(
    wal.save(undefined, [ent(2, 1)]),
    (e) => e instanceof WalFailedError && /restart the controller/.test(e.message),
  );
  await assert.rejects(wal.save(undefined, [ent(3, 1)]), WalFailedError);
  assert.ok(log.warnings.some((w) => w.includes('failed')));
  await wal.close();
  const { wal: w2, recovered } = await reopen(dir);
  assert.equal(recovered.lastIndex, 1);
  await w2.close();
});

test('compaction keeps the log readable after the WAL forgets the terms below the snapshot', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir, { segmentBytes: 4096 });
  for (let i = 1; i <= 30; i++) await wal.save(hs(1, 1, i), [ent(i, 1, 300)]);
  assert.ok((await wal.compact(25)) > 0);
  await wal.save(undefined, range(31, 33, 1));
  await assert.rejects(wal.save(undefined, range(40, 40, 1)), WalInvalidSaveError);
  await wal.close();
  const { wal: w2, recovered } = await reopen(dir, { segmentBytes: 4096 });
  assert.equal(recovered.lastIndex, 33);
  await w2.close();
});

test('unknown files in the directory are left alone', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir);
  await wal.close();
  writeFileSync(join(dir, 'notes.txt'), enc.encode('operator notes'));
  const { wal: w2 } = await reopen(dir);
  await w2.close();
  assert.ok(readdirSync(dir).includes('notes.txt'));
});

test('a save with startNow writes its record within the call; one without writes it after the microtasks', async () => {
  const dir = tempDir();
  const { wal } = await reopen(dir);
  const [segment] = segmentFiles(dir);
  const size = () => statSync(segment!).size;
  const before = size();
  const later = wal.save(hs(1, 1, 0), range(1, 3, 1));
  assert.equal(size(), before, 'a plain save waits for the current microtasks, so that others may join it');
  await later;
  const mid = size();
  assert.ok(mid > before);
  const now = wal.save(hs(1, 1, 2), range(4, 6, 1), true);
  assert.ok(size() > mid, 'the record of a startNow save is on the file before save() returns');
  await now;
  await wal.close();
  const again = await reopen(dir);
  assert.deepEqual(strip(again.recovered.entries), strip(range(1, 6, 1)));
  assert.deepEqual(again.recovered.hardState, hs(1, 1, 2));
  await again.wal.close();
});
