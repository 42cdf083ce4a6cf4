// The recent runs a worker saves in its state file: Executor.recentJson, kept up to date as keys
// come and go, is always the JSON of the list itself, and the state file written from it is the
// same file as from the plain list.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { idleExecutor } from '../../testing/worker-fixtures.js';
import { type Executor, RECENT_RUNS_MAX } from './executor.js';
import { StateFile, stateBytes, type WorkerState } from './state-file.js';

/** The recent list's JSON as the executor gives it to a save. */
const json = (x: Executor): string => Buffer.concat(x.recentJson()).toString('utf8');

function executor(): Executor {
  return idleExecutor('h1', 8);
}

test('recentJson is the JSON of the recent keys through additions, a key remembered again, and evictions', () => {
  const x = executor();
  assert.equal(json(x), '[]');
  x.refuseStart(1, 1, 'no'); // a refused start is remembered
  x.remember(['2.1', '3.2']);
  assert.equal(json(x), JSON.stringify(x.recentKeys()));
  assert.deepEqual(JSON.parse(json(x)), ['1.1', '2.1', '3.2']);
  x.remember(['1.1']); // moved to the end: rebuilt
  assert.deepEqual(JSON.parse(json(x)), ['2.1', '3.2', '1.1']);
  x.remember(['4.1']);
  assert.deepEqual(JSON.parse(json(x)), ['2.1', '3.2', '1.1', '4.1']);
  // Past the bound the oldest go: in batches (remember) and one at a time (refuseStart).
  const many = Array.from({ length: RECENT_RUNS_MAX }, (_, i) => `${100 + i}.1`);
  x.remember(many);
  assert.equal(json(x), JSON.stringify(many));
  for (let i = 0; i < 5; i++) x.refuseStart(1_000_000 + i, 3, 'no');
  const keys = x.recentKeys();
  assert.equal(keys.length, RECENT_RUNS_MAX);
  assert.equal(keys[0], '105.1');
  assert.equal(keys.at(-1), '1000004.3');
  assert.equal(json(x), JSON.stringify(keys));
  // Saves between ends, more than the chunks it keeps apart, and more ends than the list holds between two saves.
  for (let i = 0; i < 200; i++) {
    x.refuseStart(2_000_000 + i, 1, 'no');
    if (i % 3 === 0) assert.equal(json(x), JSON.stringify(x.recentKeys()), `after end ${i}`);
  }
  x.remember(Array.from({ length: RECENT_RUNS_MAX + 7 }, (_, i) => `${5_000_000 + i}.2`));
  assert.equal(json(x), JSON.stringify(x.recentKeys()));
  assert.equal(x.recentKeys()[0], '5000007.2');
});

test('a state saved with its recent keys as JSON text is the file of the same state with the list', async () => {
  const plain: WorkerState = { version: 1, host: 'h1', statuses: [], runs: [], recent: ['1.1', '22.3'] };
  const { recent, ...rest } = plain;
  const pieces = [Buffer.from('["1.1",'), Buffer.from('"22.3"]')];
  const asText = { ...rest, recentJson: pieces };
  assert.equal(stateBytes(asText).toString('utf8'), JSON.stringify(plain));
  assert.equal(
    stateBytes({ ...rest, recentJson: [Buffer.from('[]')] }).toString('utf8'),
    JSON.stringify({ ...plain, recent: [] }),
  );
  const dir = mkdtempSync(join(tmpdir(), 'xce-state-'));
  try {
    const f = new StateFile(dir);
    await f.saveAsync(asText);
    assert.equal(readFileSync(f.path, 'utf8'), JSON.stringify(plain));
    assert.deepEqual(f.load('h1'), plain);
    f.save({ ...rest, recentJson: [Buffer.from('["5.1"]')] });
    assert.deepEqual(f.load('h1'), { ...plain, recent: ['5.1'] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
