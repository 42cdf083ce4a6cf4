// The worker's state file: an asynchronous save is read back as written, and one that completes
// after a later save was installed is dropped (the file never goes back to an older state).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { STATE_FILE_NAME, StateFile, type WorkerState } from './state-file.js';

function stateWith(recent: string[]): WorkerState {
  return { version: 1, host: 'h1', statuses: [], runs: [], recent };
}

test('saveAsync writes a state that load reads back, and leaves no temporary file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xce-state-'));
  try {
    const f = new StateFile(join(dir, 'sub'));
    await f.saveAsync(stateWith(['1.1', '2.1']));
    assert.deepEqual(f.load('h1'), stateWith(['1.1', '2.1']));
    assert.equal(existsSync(join(dir, 'sub', `${STATE_FILE_NAME}.tmp-async`)), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an asynchronous save overtaken by a later synchronous one does not replace it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xce-state-'));
  try {
    const f = new StateFile(dir);
    const older = f.saveAsync(stateWith(['1.1']));
    f.save(stateWith(['1.1', '2.1'])); // shutdown's save, while the asynchronous one is on its way
    await older;
    assert.deepEqual(f.load('h1'), stateWith(['1.1', '2.1']));
    assert.equal(existsSync(join(dir, `${STATE_FILE_NAME}.tmp-async`)), false);
    await f.saveAsync(stateWith(['3.1']));
    assert.deepEqual(f.load('h1'), stateWith(['3.1']), 'a save begun after it is installed');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
