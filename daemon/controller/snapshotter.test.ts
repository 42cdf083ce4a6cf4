// The Snapshotter's interval under a flood of submits that no job ever leaves: taken from the jobs in
// its last snapshot and held until the next, so that it keeps snapshotting and compacting. Counted
// from the jobs now, the interval grew as fast as the log and was never reached again after the first
// snapshot (snapshot-schedule.ts snapshotInterval).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryStorage } from '../../raft/storage.js';
import type { ConfState } from '../../raft/types.js';
import type { FactBody } from '../../statemachine/facts.js';
import { applyFacts, configuredState } from '../../testing/state-facts.js';
import { jobSpec } from '../../testing/test-cluster.js';
import type { Applier } from './applier.js';
import { ent } from './log-store.contract.js';
import { MemoryDisk, MemoryLogStore, MemorySnapshotStore } from './memory-stores.js';
import { nodeClock } from './node-clock.js';
import { SNAPSHOT_EVERY_ENTRIES_DEFAULT } from './snapshot-schedule.js';
import { restPerMs, Snapshotter } from './snapshotter.js';

const submit = (i: number): FactBody => ({
  kind: 'submit',
  user: 'alice',
  queue: 'normal',
  profile: 'python',
  profileRequested: null,
  dependency: null,
  dependencyKill: false,
  spec: jobSpec({ command: ['./run.sh', String(i)] }),
});

test('a flood of submits, no job removed: snapshots keep coming, each within 1.5 intervals of the last', async () => {
  const state = configuredState();
  const conf: ConfState = { voters: [1, 2, 3], learners: [] };
  // What the Snapshotter reads of the applier: the state, the applied index and the membership.
  const applier = { state, applied: state.appliedIndex, conf };
  const storage = new MemoryStorage();
  const disk = new MemoryDisk({ name: 'snapshotter', onPending: (d) => queueMicrotask(() => d.flush()) });
  const logStore = MemoryLogStore.open(disk);
  const taken: Array<{ index: number; jobs: number }> = [];
  const snapshotter = new Snapshotter(
    {
      id: 2,
      // A structural stand-in: the Snapshotter reads only `state`, `applied` and `conf` of it.
      applier: applier as unknown as Applier,
      storage,
      logStore,
      snapshots: MemorySnapshotStore.open(disk),
      clock: nodeClock,
      log: {
        info: (msg, fields) => {
          if (msg === 'took a snapshot') taken.push({ index: Number(fields?.index), jobs: Number(fields?.jobs) });
        },
      },
      live: () => true,
      fail: (err) => assert.fail(String(err)),
      snapshotCatchupEntries: 100,
    },
    0,
  );
  const entriesTotal = 8 * SNAPSHOT_EVERY_ENTRIES_DEFAULT;
  const batch = 500;
  // The configuration's entry, index 1, as the state has it.
  storage.append([ent(1, 1)]);
  await logStore.save(undefined, [ent(1, 1)]);
  let lastAt = 0;
  let interval = SNAPSHOT_EVERY_ENTRIES_DEFAULT;
  while (state.appliedIndex < entriesTotal) {
    const from = state.appliedIndex + 1;
    applyFacts(
      state,
      Array.from({ length: batch }, (_, i) => submit(from + i)),
    );
    const entries = Array.from({ length: state.appliedIndex - from + 1 }, (_, i) => ent(from + i, 1));
    storage.append(entries);
    await logStore.save(undefined, entries);
    applier.applied = state.appliedIndex;
    await snapshotter.maybe();
    await snapshotter.idle();
    if (snapshotter.index > lastAt) {
      assert.ok(snapshotter.index - lastAt <= 1.5 * interval + batch, `${lastAt} -> ${snapshotter.index}`);
      lastAt = snapshotter.index;
      interval = Math.max(SNAPSHOT_EVERY_ENTRIES_DEFAULT, state.jobs.size);
    }
  }
  // 80,000 entries, each a job kept: snapshots at about 10k, 20k, 40k (phases aside), and never 1.5
  // intervals without one at the end; the log below the last one compacted.
  assert.ok(taken.length >= 3, `snapshots: ${JSON.stringify(taken)}`);
  assert.ok(
    state.appliedIndex - lastAt <= 1.5 * interval + batch,
    `last snapshot at ${lastAt} of ${state.appliedIndex}`,
  );
  assert.ok(storage.firstIndex() > lastAt - 200, `log compacted from ${storage.firstIndex()}`);
});

test("a snapshot's encoding rests between slices for as long as its duty asks: 3 ms per ms at a quarter, none once hurried", async () => {
  const state = configuredState();
  applyFacts(
    state,
    Array.from({ length: 40 }, (_, i) => submit(i)),
  );
  const conf: ConfState = { voters: [1], learners: [] };
  const applier = { state, applied: state.appliedIndex, conf };
  // Each look at the clock is 3 ms later: a slice (8 ms) ends at the third look, having taken 9 ms.
  let now = 0;
  const rests: number[] = [];
  let deferred = 0;
  const clock = {
    ...nodeClock,
    now: () => (now += 3),
    setTimeout: (fn: () => void, ms: number) => {
      rests.push(ms);
      queueMicrotask(fn);
      return nodeClock.setTimeout(() => undefined, 0);
    },
    defer: (fn: () => void) => {
      deferred++;
      queueMicrotask(fn);
    },
  };
  const take = async (snapshotDuty: number | undefined, hurry = false): Promise<void> => {
    const storage = new MemoryStorage();
    storage.append(Array.from({ length: state.appliedIndex }, (_, i) => ent(i + 1, 1)));
    const disk = new MemoryDisk({ name: 'duty', onPending: (d) => queueMicrotask(() => d.flush()) });
    const snapshotter = new Snapshotter(
      {
        id: 1,
        applier: applier as unknown as Applier,
        storage,
        logStore: MemoryLogStore.open(disk),
        snapshots: MemorySnapshotStore.open(disk),
        clock,
        log: { info: () => undefined },
        live: () => true,
        fail: (err) => assert.fail(String(err)),
        snapshotSliceJobs: 1,
        ...(snapshotDuty !== undefined ? { snapshotDuty } : {}),
      },
      0,
    );
    if (hurry) snapshotter.hurry();
    await snapshotter.maybe(true);
  };
  await take(undefined);
  assert.ok(rests.length >= 10, `rests: ${rests.join(', ')}`);
  assert.deepEqual(new Set(rests), new Set([27]), 'every slice took 9 ms and rested 27');
  assert.equal(deferred, 0);
  rests.length = 0;
  await take(1);
  assert.deepEqual(rests, [], 'a duty of 1 never waits on a timer');
  assert.ok(deferred >= 10, `turns given up between slices: ${deferred}`);
  deferred = 0;
  await take(undefined, true);
  assert.deepEqual(rests, [], 'a node that is stopping does not rest (hurry)');
  assert.ok(deferred >= 10, `turns given up between slices: ${deferred}`);
  assert.throws(() => restPerMs(0), /duty must be in \(0, 1\], not 0/);
  assert.throws(() => restPerMs(1.5), RangeError);
  assert.equal(restPerMs(0.5), 1);
});
