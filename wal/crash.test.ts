import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCrashTest, runSnapshotCrashTest } from './crash-harness.js';

// Bounded: 30 kills or 60 s, whichever comes first. `npm run crash-test -- --kills N` runs more.
const KILLS = 30;
const BUDGET_MS = 40_000;
const PREALLOCATED_KILLS = 15;
const PREALLOCATED_BUDGET_MS = 20_000;
const SNAPSHOT_KILLS = 8;
const SNAPSHOT_BUDGET_MS = 20_000;

test('SIGKILL at random moments under 8 concurrent appenders loses no acknowledged save, torn tails included', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xce-crash-'));
  try {
    const report = await runCrashTest({ dir: join(dir, 'wal'), seed: 20261130, kills: KILLS, budgetMs: BUDGET_MS });
    assert.ok(report.kills >= 5, `only ${report.kills} kills ran within the budget`);
    assert.ok(report.saves > 0, 'the child acknowledged no save at all');
    assert.ok(report.tornTails > 0, 'no torn tail was cut: the torn-write path went unexercised');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('with preallocated segments (zeros ahead of the records), SIGKILL loses no acknowledged save', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xce-crashpre-'));
  try {
    const report = await runCrashTest({
      dir: join(dir, 'wal'),
      seed: 20261202,
      kills: PREALLOCATED_KILLS,
      budgetMs: PREALLOCATED_BUDGET_MS,
      preallocateBytes: 16 * 1024,
    });
    assert.ok(report.kills >= 5, `only ${report.kills} kills ran within the budget`);
    assert.ok(report.saves > 0, 'the child acknowledged no save at all');
    assert.ok(report.tornTails > 0, 'no torn record in the zeros was cut: that path went unexercised');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('SIGKILL while snapshots are committed leaves the last acknowledged (or the next) snapshot whole and current', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xce-snapcrash-'));
  try {
    const report = await runSnapshotCrashTest({
      location: join(dir, 'snap'),
      seed: 7,
      kills: SNAPSHOT_KILLS,
      budgetMs: SNAPSHOT_BUDGET_MS,
    });
    assert.ok(report.kills >= 3, `only ${report.kills} kills ran within the budget`);
    assert.ok(report.lastIndex > 0, 'no snapshot was ever committed');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
