// Recovery: what a controller is at start, from its two stores. The snapshot store gives the state
// machine and the membership at the snapshot's index; the log store gives the hard state and every
// entry after that index (a gap between the two is refused with the log store's typed error, which
// names the data directory and the remedy). Raft's MemoryStorage is filled from them and the
// RawNode built on it. Three ways to start:
//
// - a snapshot is stored: restore it, then the log after it;
// - `join`: start empty at index 0 with no members, to be added by the leader and sent a snapshot;
// - otherwise a brand-new member of the bootstrap voters: the common bootstrap snapshot (index 1,
//   term 1), stored at once so that a restart no longer depends on the configuration.

import { RawNode } from '../../raft/rawnode.js';
import { defaultConfig } from '../../raft/config.js';
import { MemoryStorage } from '../../raft/storage.js';
import { SeededRandom } from '../../raft/prng.js';
import type { HardState, Snapshot, SnapshotMeta } from '../../raft/types.js';
import { emptyState, type ControllerState } from '../../statemachine/state.js';
import { restore } from '../../statemachine/snapshot.js';
import type { Logger } from '../log.js';
import type { LogStore, SnapshotStorePort } from './ports.js';

export interface RecoveryOptions {
  readonly id: number;
  readonly log: Pick<Logger, 'info'>;
  readonly logStore: LogStore;
  readonly snapshots: SnapshotStorePort;
  /** Seeds the election timer's randomness. */
  readonly seed: number;
  readonly bootstrapVoters: readonly number[];
  readonly join: boolean;
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
}

export interface Recovered {
  readonly storage: MemoryStorage;
  readonly raw: RawNode;
  /** The state machine at `snapshot.index`. */
  readonly state: ControllerState;
  /** The snapshot the node started from (index 0 and no members when it starts empty). */
  readonly snapshot: SnapshotMeta;
}

export async function recover(o: RecoveryOptions): Promise<Recovered> {
  const recovered = o.logStore.recovered;
  const stored = o.snapshots.latestMeta() !== undefined;
  const { storage, snap, state } = stored ? await restoreStored(o) : o.join ? startEmpty(o) : await bootstrap(o);
  // Throws the log store's gap error when entries between the snapshot and the log are missing.
  const entries = o.logStore.entriesAfter(snap.meta.index);
  if (entries.length > 0) storage.append(entries);
  if (stored || (o.join && recovered.hardState.term > 0)) {
    const hs = hardStateWith(recovered.hardState, snap.meta, o.log);
    storage.setHardState(hs);
    if (stored && recovered.snapshot.index < snap.meta.index) await markStoredSnapshot(o, snap.meta, hs);
  }
  const cfg = defaultConfig(o.id, {
    applied: snap.meta.index,
    electionTicks: o.electionTicks,
    heartbeatTicks: o.heartbeatTicks,
  });
  const raw = new RawNode(cfg, storage, new SeededRandom(o.seed));
  o.log.info('recovered log', {
    snapshotIndex: snap.meta.index,
    walEntries: entries.length,
    term: recovered.hardState.term,
    commit: recovered.hardState.commit,
    tornTail: recovered.tornTail ?? null,
  });
  return { storage, raw, state, snapshot: snap.meta };
}

/** Where recovery starts from, before the log after it is appended. */
interface Start {
  readonly storage: MemoryStorage;
  readonly snap: Snapshot;
  readonly state: ControllerState;
}

/** A snapshot is stored: the state machine and Raft's storage start from it. */
async function restoreStored(o: RecoveryOptions): Promise<Start> {
  const { meta, data } = await o.snapshots.readAll();
  const snap: Snapshot = { meta, data };
  const state = data.byteLength === 0 ? emptyState() : restore(data);
  const storage = new MemoryStorage();
  storage.applySnapshot(snap);
  o.log.info('restored snapshot', {
    index: meta.index,
    term: meta.term,
    bytes: data.byteLength,
    jobs: state.jobs.size,
  });
  return { storage, snap, state };
}

/**
 * A member joining an existing cluster starts empty, at index 0. It must not start from a bootstrap
 * snapshot: one with no members at the index and term of the cluster's own (index 1, term 1) would
 * pass Raft's log-matching check, and the joiner would replay the log from index 2 without the
 * founding membership. Empty, it matches nothing, and the leader sends it a snapshot first. Nothing is
 * stored until that snapshot arrives; a vote it gave meanwhile is in the log store and is kept across
 * a restart (recover).
 */
function startEmpty(o: RecoveryOptions): Start {
  const storage = new MemoryStorage();
  o.log.info('started empty, to be added to a cluster', { join: true });
  return { storage, snap: storage.snapshot(), state: emptyState() };
}

/** A brand-new initial voter: the bootstrap snapshot every initial voter shares (MemoryStorage.bootstrap), stored at once. */
async function bootstrap(o: RecoveryOptions): Promise<Start> {
  const voters = [...o.bootstrapVoters];
  const storage = MemoryStorage.bootstrap({ voters, learners: [] });
  const snap = storage.snapshot();
  await o.snapshots.save(snap.meta, snap.data);
  await o.logStore.saveSnapshot({ index: snap.meta.index, term: snap.meta.term });
  await o.logStore.save(storage.getHardState(), []);
  o.log.info('bootstrapped a new member', { voters, join: false });
  return { storage, snap, state: emptyState() };
}

/**
 * The crash came between storing a snapshot from the leader and marking it in the log store: the
 * mark is written now, so that the log store's next entries follow the snapshot.
 */
async function markStoredSnapshot(o: RecoveryOptions, meta: SnapshotMeta, hs: HardState): Promise<void> {
  const mark = o.logStore.recovered.snapshot.index;
  await o.logStore.saveSnapshot({ index: meta.index, term: meta.term });
  if (hs !== o.logStore.recovered.hardState) await o.logStore.save(hs, []);
  o.log.info('marked the stored snapshot in the log store (a crash came between the two)', {
    snapshotIndex: meta.index,
    mark,
  });
}

/**
 * The log store's hard state, made to agree with the snapshot. A snapshot installed from the leader
 * is stored before the log store learns of it (its mark and the hard state that goes with it follow),
 * so a crash in between leaves a snapshot newer than the hard state's commit (and maybe its term).
 * A snapshot only ever holds committed entries at a term its node has seen: the commit is raised to
 * its index, and the term to its term (with no vote in that newer term). Found by the whole-controller
 * simulator (seed 237); Raft refuses a commit index below its first entry.
 */
export function hardStateWith(hs: HardState, snap: SnapshotMeta, log: Pick<Logger, 'info'>): HardState {
  let out = hs;
  if (out.term < snap.term) out = { term: snap.term, vote: 0, commit: out.commit };
  if (out.commit < snap.index) out = { ...out, commit: snap.index };
  if (out !== hs)
    log.info("the stored snapshot is newer than the log store's hard state: raised to it", {
      snapshotIndex: snap.index,
      snapshotTerm: snap.term,
      term: hs.term,
      commit: hs.commit,
    });
  return out;
}
