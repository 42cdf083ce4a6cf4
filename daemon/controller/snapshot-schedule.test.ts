// The members' snapshot schedule: each member of a configuration has its own phase, its snapshots
// stay between half and one and a half intervals apart whatever the batches of applied entries, the
// members' snapshots stay apart from one another, and a member never goes without one for long.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ConfState } from '../../raft/types.js';
import {
  SNAPSHOT_EVERY_ENTRIES_DEFAULT,
  nextSnapshotPoint,
  snapshotDue,
  snapshotInterval,
  snapshotPhase,
} from './snapshot-schedule.js';

/** Batch sizes of applied entries, cycled: fixed, so that a failure replays exactly. */
const BATCHES = [1, 7, 64, 3, 120, 31, 2, 90, 15, 1, 45];
const BATCH_MAX = Math.max(...BATCHES);

/**
 * Applies `total` entries in BATCHES, starting `offset` batches into the cycle (members see different
 * batches), checking after each batch as the Ready loop does; returns the indexes snapshotted at and
 * the interval `every` had at each. `everyAt` gives the threshold at an applied index.
 */
function run(
  id: number,
  conf: ConfState,
  total: number,
  everyAt: (applied: number) => number,
  offset = 0,
  start = 0,
): { at: number[]; every: number[] } {
  const at: number[] = [];
  const every: number[] = [];
  let last = start;
  let applied = start;
  for (let b = offset; applied < total; b++) {
    applied += BATCHES[b % BATCHES.length]!;
    const e = everyAt(applied);
    if (snapshotDue(applied, last, e, snapshotPhase(id, conf, e))) {
      at.push(applied);
      every.push(e);
      last = applied;
    }
  }
  return { at, every };
}

describe('snapshotPhase', () => {
  it('gives each member of a configuration its own phase, spread evenly over the interval', () => {
    const conf: ConfState = { voters: [7, 3, 12], learners: [] };
    assert.deepEqual(
      [3, 7, 12].map((id) => snapshotPhase(id, conf, 9_000)),
      [0, 3_000, 6_000],
    );
    // The order the configuration lists them in does not matter: only the ids do.
    assert.equal(snapshotPhase(7, { voters: [12, 7, 3], learners: [] }, 9_000), 3_000);
  });

  it('counts learners among the members, and gives 0 to a node outside the configuration', () => {
    const conf: ConfState = { voters: [1, 2, 3], learners: [4] };
    assert.deepEqual(
      [1, 2, 3, 4].map((id) => snapshotPhase(id, conf, 10_000)),
      [0, 2_500, 5_000, 7_500],
    );
    assert.equal(snapshotPhase(9, conf, 10_000), 0);
    assert.equal(snapshotPhase(1, { voters: [], learners: [] }, 10_000), 0);
  });

  it('stays below the interval for any number of members and any interval', () => {
    for (const n of [1, 2, 3, 5, 7])
      for (const every of [1, 2, 3, 50, 10_000]) {
        const conf: ConfState = { voters: Array.from({ length: n }, (_, i) => i + 1), learners: [] };
        for (let id = 1; id <= n; id++) {
          const p = snapshotPhase(id, conf, every);
          assert.ok(p >= 0 && p < every, `n ${n} every ${every} id ${id}: phase ${p}`);
        }
      }
  });
});

describe('snapshotDue', () => {
  it('puts the next point half to one and a half intervals past the last snapshot, on the phase', () => {
    for (const last of [0, 1, 4_999, 5_000, 12_345])
      for (const phase of [0, 3_333, 6_666]) {
        const p = nextSnapshotPoint(last, 10_000, phase);
        assert.ok(p - last >= 5_000 && p - last < 15_000, `last ${last} phase ${phase}: point ${p}`);
        assert.equal((((p - phase) % 10_000) + 10_000) % 10_000, 0);
      }
  });

  it('is not due before half an interval, and always due after one and a half', () => {
    assert.equal(snapshotDue(4_999, 0, 10_000, 0), false);
    assert.equal(snapshotDue(15_000, 0, 10_000, 9_999), true);
    assert.equal(snapshotDue(10, 10, 10_000, 0), false);
  });

  it('with a steady interval: every member snapshots once per interval, on its phase, apart from the others', () => {
    const conf: ConfState = { voters: [1, 2, 3], learners: [] };
    const every = 10_000;
    const runs = [1, 2, 3].map((id) => run(id, conf, 200_000, () => every, id * 4));
    for (const [k, r] of runs.entries()) {
      assert.ok(r.at.length >= 18, `member ${k + 1} snapshotted ${r.at.length} times in 200,000 entries`);
      for (let i = 1; i < r.at.length; i++) {
        const gap = r.at[i]! - r.at[i - 1]!;
        assert.ok(gap >= every / 2 && gap <= 1.5 * every + BATCH_MAX, `member ${k + 1}: interval ${gap}`);
      }
      // After the first, each snapshot is within one batch past the member's own point.
      const phase = snapshotPhase(k + 1, conf, every);
      for (const i of r.at.slice(1)) assert.ok((((i - phase) % every) + every) % every < BATCH_MAX, `${i}`);
    }
    // No two members snapshot within a third of an interval (less a batch) of each other.
    const all = runs.flatMap((r, k) => r.at.map((i) => ({ i, k }))).sort((a, b) => a.i - b.i);
    for (let j = 1; j < all.length; j++)
      assert.ok(
        all[j]!.i - all[j - 1]!.i >= every / 3 - BATCH_MAX,
        `members ${all[j - 1]!.k + 1} and ${all[j]!.k + 1} at ${all[j - 1]!.i} and ${all[j]!.i}`,
      );
  });

  it('after a snapshot installed from the leader at any index, the next comes within the bounds and back on the phase', () => {
    const conf: ConfState = { voters: [1, 2, 3], learners: [] };
    for (const start of [1, 2_000, 3_300, 3_400, 9_999, 123_456]) {
      const r = run(2, conf, start + 60_000, () => 10_000, 0, start);
      assert.ok(r.at[0]! - start >= 5_000 && r.at[0]! - start <= 15_000 + BATCH_MAX, `start ${start}: ${r.at[0]}`);
      for (const i of r.at) assert.ok((((i - 3_333) % 10_000) + 10_000) % 10_000 < BATCH_MAX, `start ${start}: ${i}`);
    }
  });

  it('with an interval that grows with the jobs: every snapshot within 1.5 of the interval of its time', () => {
    // share: jobs per applied entry. At 1 (no job ever removed) the interval grows as fast as the log,
    // and a member may never reach its point: the old rule (a full interval since the last) never
    // came due again either. The bound is checked there, the count only below it.
    const conf: ConfState = { voters: [1, 2, 3], learners: [] };
    for (const share of [0.25, 0.5, 1]) {
      const everyAt = (applied: number): number => Math.max(10_000, Math.floor(applied * share));
      for (const id of [1, 2, 3]) {
        const r = run(id, conf, 300_000, everyAt, id);
        if (share < 1) assert.ok(r.at.length >= 2, `share ${share} member ${id}: ${r.at.join(' ')}`);
        let last = 0;
        for (const [i, at] of r.at.entries()) {
          assert.ok(at - last <= 1.5 * r.every[i]! + BATCH_MAX, `share ${share} member ${id}: ${last} -> ${at}`);
          last = at;
        }
      }
    }
  });

  it('with the interval held from the last snapshot: a member keeps snapshotting while every entry adds jobs', () => {
    // The flood the rule above cannot follow: no job removed, 1 or 3 jobs per entry (batched submits).
    // The interval comes from the jobs in the last snapshot and holds until the next, as the
    // Snapshotter does it; the log between two snapshots stays within 1.5 intervals.
    const conf: ConfState = { voters: [1, 2, 3], learners: [] };
    for (const jobsPerEntry of [1, 3]) {
      for (const id of [1, 2, 3]) {
        let last = 0;
        let jobsAtLast = 0;
        let every = snapshotInterval(undefined, jobsAtLast);
        const at: number[] = [];
        let applied = 0;
        for (let b = id; applied < 2_000_000; b++) {
          applied += BATCHES[b % BATCHES.length]!;
          if (!snapshotDue(applied, last, every, snapshotPhase(id, conf, every))) continue;
          assert.ok(
            applied - last <= 1.5 * every + BATCH_MAX,
            `${jobsPerEntry} jobs/entry, member ${id}: ${last} -> ${applied}`,
          );
          at.push(applied);
          last = applied;
          jobsAtLast = applied * jobsPerEntry;
          const next = snapshotInterval(undefined, jobsAtLast);
          assert.ok(next >= every, 'the interval never shrinks while no job is removed');
          every = next;
        }
        // Never 1.5 intervals without one (the old rule's flood went without any after its first), and
        // the intervals grow with the jobs (1 + jobs per entry times per snapshot): a few, not one.
        assert.ok(
          2_000_000 - last <= 1.5 * every + BATCH_MAX,
          `${jobsPerEntry} jobs/entry, member ${id}: last ${last}`,
        );
        assert.ok(at.length >= 4, `${jobsPerEntry} jobs/entry, member ${id}: snapshots at ${at.join(' ')}`);
      }
    }
  });

  it('a configured interval is used as it is; the default is at least SNAPSHOT_EVERY_ENTRIES_DEFAULT', () => {
    assert.equal(snapshotInterval(500, 1_000_000), 500);
    assert.equal(snapshotInterval(undefined, 0), SNAPSHOT_EVERY_ENTRIES_DEFAULT);
    assert.equal(snapshotInterval(undefined, 250_000), 250_000);
  });
});
