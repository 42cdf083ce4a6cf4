// recover() from the two stores, and hardStateWith. The crash case the simulator found: a snapshot
// from the leader stored, then a crash before the log store heard of it.

import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { HardState, SnapshotMeta } from '../../raft/types.js';
import { snapshot } from '../../statemachine/snapshot.js';
import { emptyState } from '../../statemachine/state.js';
import { WalGapError, WalInvalidSaveError } from '../../wal/errors.js';
import type { WalLogger } from '../../wal/wal.js';
import { LevelSnapshotStore } from './level-snapshot-store.js';
import { ent, hs, range, strip } from './log-store.contract.js';
import { MemoryDisk, MemoryLogStore, MemorySnapshotStore } from './memory-stores.js';
import type { LogStore, SnapshotStorePort } from './ports.js';
import { hardStateWith, recover } from './recovery.js';
import { WalLogStore } from './wal-log-store.js';

interface Stores {
  readonly logStore: LogStore;
  readonly snapshots: SnapshotStorePort;
}

/** Where a node's two stores live; `open` opens both again (a restart), `close` closes both. */
interface Node {
  open(): Promise<Stores>;
  close(s: Stores): Promise<void>;
  cleanup(): Promise<void>;
}

function memoryNode(): Node {
  const disk = new MemoryDisk({ name: 'recovery', onPending: (d) => queueMicrotask(() => d.flush()) });
  return {
    open: async () => ({ logStore: MemoryLogStore.open(disk), snapshots: MemorySnapshotStore.open(disk) }),
    close: async (s) => {
      await s.logStore.close();
      await s.snapshots.close();
    },
    cleanup: async () => undefined,
  };
}

async function realNode(): Promise<Node> {
  const dir = await mkdtemp(join(tmpdir(), 'xce-recovery-'));
  const quiet: WalLogger = { info: () => undefined, warn: () => undefined };
  return {
    open: async () => ({
      logStore: await WalLogStore.open({ dataDir: dir, logger: quiet }),
      snapshots: await LevelSnapshotStore.open(dir),
    }),
    close: async (s) => {
      await s.logStore.close();
      await s.snapshots.close();
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

function captureLog() {
  const lines: string[] = [];
  return { lines, info: (msg: string) => void lines.push(msg) };
}

function recoverFrom(s: Stores, log: ReturnType<typeof captureLog>) {
  return recover({
    id: 1,
    log,
    ...s,
    seed: 1,
    bootstrapVoters: [1, 2, 3],
    join: false,
    electionTicks: 10,
    heartbeatTicks: 1,
  });
}

const leaderSnapshot: SnapshotMeta = { index: 49, term: 3, conf: { voters: [1, 2, 3], learners: [] } };
const MARKED = 'marked the stored snapshot in the log store (a crash came between the two)';

/**
 * The state the simulator's crash left: the log store at mark 30, entries 31..44, hard state term 3
 * commit 43; the snapshot store holding the leader's snapshot at index 49, term 3.
 */
async function crashAfterStoringSnapshot(s: Stores): Promise<void> {
  await s.logStore.saveSnapshot({ index: 30, term: 2 });
  await s.logStore.save(hs(3, 2, 43), range(31, 44, 3));
  await s.snapshots.save(leaderSnapshot, snapshot(emptyState()));
}

async function snapshotNewerThanTheLog(node: Node): Promise<void> {
  try {
    const before = await node.open();
    await crashAfterStoringSnapshot(before);
    await node.close(before);

    const s = await node.open();
    // As found: entry 50 does not follow the log's 44.
    await assert.rejects(s.logStore.save(hs(3, 2, 43), [ent(50, 3)]), WalInvalidSaveError);
    const log = captureLog();
    const r = await recoverFrom(s, log);
    assert.deepEqual(r.snapshot, leaderSnapshot);
    assert.equal(r.state.jobs.size, 0);
    assert.deepEqual(r.storage.getHardState(), hs(3, 2, 49));
    assert.equal(r.storage.firstIndex(), 50);
    assert.equal(r.storage.lastIndex(), 49);
    assert.ok(log.lines.includes(MARKED), log.lines.join('\n'));
    // The mark is written: the next entry from the leader is accepted.
    await s.logStore.save(hs(3, 2, 49), [ent(50, 3)]);
    await node.close(s);

    // A second restart finds the stores agreeing and writes nothing more.
    const again = await node.open();
    assert.deepEqual(again.logStore.recovered.snapshot, { index: 49, term: 3 });
    assert.deepEqual(again.logStore.recovered.hardState, hs(3, 2, 49));
    const log2 = captureLog();
    const r2 = await recoverFrom(again, log2);
    assert.deepEqual(r2.storage.getHardState(), hs(3, 2, 49));
    assert.equal(r2.storage.lastIndex(), 50);
    assert.deepEqual(strip(r2.storage.entries(50, 51, Infinity)), strip([ent(50, 3)]));
    assert.equal(log2.lines.includes(MARKED), false);
    await node.close(again);
  } finally {
    await node.cleanup();
  }
}

test("recover: a snapshot stored past the log store's mark (memory stores) raises commit and writes the mark", async () => {
  await snapshotNewerThanTheLog(memoryNode());
});

test("recover: a snapshot stored past the log store's mark (WAL and LevelDB) raises commit and writes the mark", async () => {
  await snapshotNewerThanTheLog(await realNode());
});

test("recover: entries between the stored snapshot and the log's first entry missing is refused with WalGapError", async () => {
  const node = memoryNode();
  const s = await node.open();
  await s.logStore.save(hs(1, 1, 10), range(1, 10, 1));
  await s.logStore.saveSnapshot({ index: 6, term: 1 });
  await s.snapshots.save({ index: 3, term: 1, conf: { voters: [1, 2, 3], learners: [] } }, new Uint8Array(0));
  await node.close(s);
  const again = await node.open();
  await assert.rejects(
    recoverFrom(again, captureLog()),
    (e) => e instanceof WalGapError && e.firstIndex === 7 && e.snapshotIndex === 3,
  );
});

test("recover: a snapshot behind the log's mark restores it and appends the log after it", async () => {
  const node = memoryNode();
  const s = await node.open();
  await s.logStore.save(hs(2, 1, 8), range(1, 10, 2));
  await s.snapshots.save({ index: 6, term: 2, conf: { voters: [1, 2, 3], learners: [] } }, new Uint8Array(0));
  await s.logStore.saveSnapshot({ index: 6, term: 2 });
  await node.close(s);
  const again = await node.open();
  const log = captureLog();
  const r = await recoverFrom(again, log);
  assert.deepEqual(r.storage.getHardState(), hs(2, 1, 8));
  assert.equal(r.storage.firstIndex(), 7);
  assert.deepEqual(strip(r.storage.entries(7, 11, Infinity)), strip(range(7, 10, 2)));
  assert.equal(log.lines.includes(MARKED), false);
});

// ---- hardStateWith

const snapAt = (index: number, term: number): SnapshotMeta => ({ index, term, conf: { voters: [1], learners: [] } });

function raised(h: HardState, snap: SnapshotMeta) {
  const log = captureLog();
  return { out: hardStateWith(h, snap, log), lines: log.lines };
}

test('hardStateWith: a snapshot of a newer term raises the term and clears the vote', () => {
  const { out, lines } = raised(hs(2, 3, 10), snapAt(5, 4));
  assert.deepEqual(out, hs(4, 0, 10));
  assert.equal(lines.length, 1);
});

test('hardStateWith: a snapshot past the commit raises the commit and keeps the vote of the same term', () => {
  const { out } = raised(hs(3, 2, 43), snapAt(49, 3));
  assert.deepEqual(out, hs(3, 2, 49));
});

test('hardStateWith: a snapshot newer in both raises both and clears the vote', () => {
  const { out } = raised(hs(2, 1, 5), snapAt(9, 3));
  assert.deepEqual(out, hs(3, 0, 9));
});

test("hardStateWith: a newer term than the snapshot's keeps its term and vote; only the commit rises", () => {
  const { out } = raised(hs(5, 2, 40), snapAt(49, 3));
  assert.deepEqual(out, hs(5, 2, 49));
});

test('hardStateWith: a hard state already covering the snapshot is returned as it is, and nothing is logged', () => {
  const h = hs(5, 2, 60);
  const { out, lines } = raised(h, snapAt(49, 3));
  assert.equal(out, h);
  assert.deepEqual(lines, []);
});
