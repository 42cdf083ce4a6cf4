import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PeekError, readPiece } from './peek.js';
import { scriptProblem, SCRIPT_BYTES_MAX, utf8Bytes } from '../../model/job-limits.js';

const dir = mkdtempSync(join(tmpdir(), 'xce-peek-'));
const file = join(dir, 'out');
writeFileSync(file, 'line 1\nline 2\nline 3\n');

test('peek reads the tail of the stdout file, then from an offset, bounded by maxBytes', async () => {
  const tail = await readPiece(file, null, null, 7);
  assert.deepEqual(
    { offset: tail.offset, size: tail.size, text: tail.data.toString() },
    { offset: 14, size: 21, text: 'line 3\n' },
  );
  const from = await readPiece(file, null, 7, 100);
  assert.equal(from.data.toString(), 'line 2\nline 3\n');
  const nothing = await readPiece(file, null, 21, 100);
  assert.equal(nothing.data.length, 0);
  const truncated = await readPiece(file, null, 500, 4); // past the end: the file was truncated, read from its start
  assert.equal(truncated.data.toString(), 'line');
});

test('peek refuses a symbolic link, another owner, and a missing file, saying which', async () => {
  const link = join(dir, 'link');
  symlinkSync(file, link);
  await assert.rejects(
    readPiece(link, null, null, 10),
    (e) => e instanceof PeekError && /cannot open the stdout file .*ELOOP/.test(e.message),
  );
  const uid = (process.getuid?.() ?? 0) + 1;
  await assert.rejects(readPiece(file, uid, null, 10), new RegExp(`is not owned by the job's user \\(uid ${uid}\\)`));
  await assert.rejects(readPiece(join(dir, 'nope'), null, null, 10), /ENOENT/);
});

test('a job script is at most 1 MiB of UTF-8 and holds no NUL byte', () => {
  assert.equal(utf8Bytes('aé€😀'), 1 + 2 + 3 + 4);
  assert.equal(scriptProblem('x'.repeat(SCRIPT_BYTES_MAX)), null);
  assert.match(
    scriptProblem('x'.repeat(SCRIPT_BYTES_MAX + 1)) ?? '',
    /larger than the limit of 1048576 bytes \(1 MiB\)/,
  );
  assert.match(scriptProblem('é'.repeat(SCRIPT_BYTES_MAX / 2 + 1)) ?? '', /is 1048578 bytes/);
  assert.match(scriptProblem('echo\0') ?? '', /contains a NUL byte/);
});
