// A lost segment at the start of the log, checked against the latest snapshot (entriesAfterSnapshot).
// Which entries a segment holds depends on group commit: saves made in one step share a record, and a
// record that does not fit the active segment starts the next one. So the first segment may hold no
// entry after the snapshot at all (only the snapshot mark and a hard state, which the next segment's
// header repeats): losing it loses nothing, and the WAL rightly opens, exactly as after compact().
// When the segment left holds no entry either, the log's first index still says which entries it
// held: losing them is a gap, refused like any other.
import assert from 'node:assert/strict';
import { mkdtempSync, promises as fsp, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, test } from 'node:test';
import type { Entry, HardState } from '../raft/types.js';
import { WalGapError } from './errors.js';
import { SEGMENT_BYTES_MIN } from './limits.js';
import { type WalLogger, Wal, entriesAfterSnapshot } from './wal.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'xce-wal-gap-'));
  dirs.push(d);
  return join(d, 'wal');
}
const quiet: WalLogger = { info: () => undefined, warn: () => undefined };
const ent = (index: number, term: number, bytes: number): Entry => ({
  index,
  term,
  type: 0,
  data: new Uint8Array(bytes).fill(index & 0xff),
});
const hs = (term: number, vote: number, commit: number): HardState => ({ term, vote, commit });
const segments = (dir: string): string[] =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.wal'))
    .sort()
    .map((f) => join(dir, f));
const open = (dir: string) => Wal.open(dir, { logger: quiet, segmentBytes: SEGMENT_BYTES_MIN });

/**
 * A member's first segment as bootstrap leaves it: the snapshot mark at (1, 1) and a hard state.
 * Then entry 2 (small: a new leader's empty entry) and entry 3 (nearly a segment: a config fact),
 * saved together (one record, which does not fit beside the mark: the next segment starts at 2) or
 * one after the other (entry 2 stays in the first segment; entry 3 starts the next one at 3).
 */
async function bootstrapLog(together: boolean): Promise<string> {
  const dir = tempDir();
  const { wal } = await open(dir);
  await wal.saveSnapshot({ index: 1, term: 1 });
  await wal.save(hs(1, 0, 1), []);
  const big = ent(3, 2, SEGMENT_BYTES_MIN - 64);
  if (together) await Promise.all([wal.save(hs(2, 1, 1), [ent(2, 2, 0)]), wal.save(undefined, [big])]);
  else {
    await wal.save(hs(2, 1, 1), [ent(2, 2, 0)]);
    await wal.save(undefined, [big]);
  }
  await wal.close();
  return dir;
}

/**
 * Writes the log of `bootstrapLog`, checks it is two segments, the second named by `second`, and
 * reopens it with the first removed; the snapshot mark (1, term 1) survives either way.
 */
async function loseFirstSegment(together: boolean, second: RegExp) {
  const dir = await bootstrapLog(together);
  const files = segments(dir);
  assert.equal(files.length, 2);
  assert.match(files[1]!, second);
  await fsp.unlink(files[0]!);
  const { wal, recovered } = await open(dir);
  await wal.close();
  assert.deepEqual(recovered.snapshot, { index: 1, term: 1 });
  return { dir, recovered };
}

test('a lost first segment that held the first entry after the snapshot is a gap (WalGapError)', async () => {
  const { dir, recovered } = await loseFirstSegment(false, /0000000000000001-0000000000000003\.wal$/);
  assert.throws(
    () => entriesAfterSnapshot(dir, recovered, 1),
    (e) =>
      e instanceof WalGapError && /starts at entry 3 but the latest snapshot ends at 1: entries 2\.\.2/.test(e.message),
  );
});

test('a lost first segment that held no entry after the snapshot loses nothing: the log continues the snapshot', async () => {
  // Entries 2 and 3 went out in one record, too big for the first segment: the second starts at 2.
  const { dir, recovered } = await loseFirstSegment(true, /0000000000000001-0000000000000002\.wal$/);
  // The second segment's header carries the mark and the hard state: the log is whole.
  assert.deepEqual(recovered.hardState, hs(2, 1, 1));
  assert.deepEqual(
    entriesAfterSnapshot(dir, recovered, 1).map((e) => e.index),
    [2, 3],
  );
});

test('a lost first segment is a gap even when the segments left hold no entry', async () => {
  const dir = tempDir();
  const { wal } = await open(dir);
  await wal.save(hs(1, 1, 0), [ent(1, 1, 1000), ent(2, 1, 1000), ent(3, 1, 1000)]);
  // Hard states only, until the WAL starts a second segment: it holds no entry, and its header says
  // the log goes on at 4.
  for (let k = 1; wal.segmentFiles().length < 2; k++) {
    assert.ok(k <= SEGMENT_BYTES_MIN, 'the WAL starts a second segment');
    await wal.save(hs(1 + k, 0, 3), []);
  }
  await wal.close();
  const files = segments(dir);
  assert.equal(files.length, 2);
  await fsp.unlink(files[0]!);
  const reopened = await open(dir);
  await reopened.wal.close();
  const recovered = reopened.recovered;
  assert.deepEqual(recovered.entries, []);
  assert.equal(recovered.firstIndex, 4);
  assert.throws(
    () => entriesAfterSnapshot(dir, recovered, 0),
    (e) => e instanceof WalGapError && e.firstIndex === 4 && /entries 1\.\.3 are missing/.test(e.message),
  );
  // A snapshot that covers the lost entries makes the log whole again.
  assert.deepEqual(entriesAfterSnapshot(dir, recovered, 3), []);
});
