// The accounting store on its own: records written once (a replayed CleanFact adds nothing),
// read back by id, listed by filters, reported from buckets exactly as from single jobs, compacted
// by age; the gap a snapshot leaves is kept; a store that cannot be used names its path and the
// way to rebuild it.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Level } from 'level';
import { emptyState, type Job } from '../../statemachine/state.js';
import { jobSpec } from '../../testing/test-cluster.js';
import { accountingReport } from './report.js';
import { AccountingStore, AccountingStoreError } from './store.js';

const T0 = Date.UTC(2026, 0, 1, 10, 0, 0);
const USERS = ['alice', 'bob'];

function job(id: number, endMs: number): Job {
  void emptyState;
  return {
    id,
    state: id % 5 === 0 ? 'EXIT' : 'DONE',
    user: USERS[id % 2]!,
    queue: id % 3 === 0 ? 'night' : 'normal',
    profile: id % 2 === 0 ? 'python' : 'openfoam',
    profileRequested: null,
    spec: jobSpec({ jobName: `j${id}` }),
    submitTimeMs: endMs - 120_000,
    runNumber: 1,
    requeueCount: 0,
    record: null,
    dispatchTimeMs: endMs - 110_000,
    started: true,
    pid: 100 + id,
    startTimeMs: endMs - 100_000,
    endTimeMs: endMs,
    exitCode: id % 5 === 0 ? 1 : 0,
    signal: null,
    reason: null,
    killRequestedBy: null,
    lastDecline: null,
    heldBy: null,
    events: id % 4 === 0 ? [{ action: 'hold', user: 'alice', timeMs: endMs - 119_000, detail: null }] : [],
    dependency: null,
  };
}

test('records are kept once, read back, listed, reported exactly and compacted by age', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xce-acct-'));
  try {
    const s = await AccountingStore.open(dir);
    const jobs = Array.from({ length: 400 }, (_, i) => job(i + 1, T0 + i * 37_000)); // over about 4 hours
    for (let i = 0; i < jobs.length; i += 50) s.record(100 + i, T0 + i, jobs.slice(i, i + 50));
    s.record(100, T0, jobs.slice(0, 50)); // a CleanFact replayed after a restart
    await s.flushedThrough(1000);
    assert.equal((await s.stats()).records, 400);
    const got = await s.get(7);
    assert.equal(got?.job.spec.jobName, 'j7');
    assert.equal(got?.cleanIndex, 100);
    assert.equal(await s.get(999), null);
    const bobs = await s.list({ user: 'bob', limit: 10 });
    assert.deepEqual(
      bobs.map((x) => x.job.id),
      [399, 397, 395, 393, 391, 389, 387, 385, 383, 381],
    );
    const since = await s.list({ sinceMs: T0 + 390 * 37_000, limit: 100 });
    assert.deepEqual(
      since.map((x) => x.job.id).sort((a, b) => a - b),
      Array.from({ length: 10 }, (_, i) => 391 + i),
    );
    // Reports from buckets equal the sums over the single jobs, for ranges cut anywhere.
    for (const [from, to] of [
      [T0 - 1, T0 + 400 * 37_000],
      [T0 + 12_345, T0 + 3 * 3_600_000 + 59_999],
      [T0 + 61_000, T0 + 62_000],
    ] as const) {
      const rows = await accountingReport(s, from, to, 'user');
      for (const u of USERS) {
        const mine = jobs.filter((j) => j.user === u && j.endTimeMs >= from && j.endTimeMs < to);
        const row = rows.find((r) => r.key === u);
        assert.equal(row?.jobs ?? 0, mine.length, `${u} in [${from}, ${to})`);
        if (mine.length > 0) assert.equal(row!.exit, mine.filter((j) => j.state === 'EXIT').length);
      }
    }
    // Compaction goes by whole hours: a cutoff at 11:01:40 drops what ended before 11:00.
    const gone = jobs.filter((j) => j.endTimeMs < T0 + 3_600_000).length;
    assert.equal(await s.compact(T0 + 100 * 37_000), gone);
    assert.equal((await s.stats()).records, 400 - gone);
    assert.equal(await s.get(50), null);
    assert.equal((await accountingReport(s, T0 - 1, T0 + 1e9, null))[0]!.jobs, 400 - gone);
    await s.addGap(10, 80);
    await s.close();
    const again = await AccountingStore.open(dir);
    assert.deepEqual(again.gaps, [[10, 80]]);
    assert.equal(again.created, false);
    await again.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a store that cannot be used is refused naming its path and how to rebuild it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xce-acct-'));
  try {
    const db = new Level<string, string>(join(dir, 'accounting'));
    await db.put('m!count', 'many');
    await db.close();
    await assert.rejects(AccountingStore.open(dir), (e: unknown) => {
      assert.ok(e instanceof AccountingStoreError);
      assert.equal(e.path, join(dir, 'accounting'));
      assert.match(e.message, /m!count holds "many", not a whole number/);
      assert.match(e.message, /move .*accounting away, copy .*accounting from another controller/);
      return true;
    });
    // Garbage in LevelDB's own files.
    for (const f of readdirSync(join(dir, 'accounting'))) writeFileSync(join(dir, 'accounting', f), 'garbage');
    await assert.rejects(AccountingStore.open(dir), AccountingStoreError);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
