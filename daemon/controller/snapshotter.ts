// Snapshots of this controller's own state, and the storing of a snapshot received from the leader.
//
// A snapshot is taken when enough entries were applied since the last one. It is encoded at the
// applied index a slice at a time, the event loop free in between, so that the Ready loop goes on
// persisting, sending, committing and applying every kind of entry meanwhile: the snapshot is of one
// index, the encoder keeping each job as it was before its first change or its removal
// (copy-on-write: statemachine/state.ts editJob and removeJob, the only ways to change a job or take
// it out, tell it). Starting one copies nothing in proportion to the jobs. The state at the index
// is checked as it is encoded (statemachine/invariants.ts StateInvariantWalk, fed each job as it is
// written): a state that breaks an invariant is never stored, and the node fail-stops rather than
// serve it. Storing it, marking the log store and compacting follow, also off the Ready loop. The
// threshold grows with the number of jobs in the last snapshot, so that the encoding cost (linear in
// the state) stays a small share of the work. The members snapshot at different indexes
// (snapshot-schedule.ts), so that not all of them encode and write at once.

import type { MemoryStorage } from '../../raft/storage.js';
import type { NodeId, Snapshot } from '../../raft/types.js';
import { StateInvariantError, StateInvariantWalk } from '../../statemachine/invariants.js';
import { SnapshotEncoder } from '../../statemachine/snapshot.js';
import type { Logger } from '../log.js';
import type { Applier } from './applier.js';
import { storage } from './errors.js';
import { snapshotDue, snapshotInterval, snapshotPhase } from './snapshot-schedule.js';
import type { AccountingPort, ClockPort, LogStore, SnapshotStorePort } from './ports.js';

/** A snapshot is encoded this many jobs at a time between looks at the clock (about 1 ms). */
export const SNAPSHOT_SLICE_JOBS = 500;
/** ...and yields to the event loop after this long, so that heartbeats, votes, appends and writes go
 * on while a large state is encoded (a million jobs take seconds; the election timeout is 250 ms,
 * and a write's answer should not wait behind more than a few ms of encoding). */
export const SNAPSHOT_SLICE_MS = 8;
/** The share of the event loop a snapshot of our own may take while it is encoded and stored: after
 * a slice of t ms it waits t * (1 / duty - 1) ms before the next, and so does the store between its
 * chunks. A large state takes longer to snapshot, and the writes answered meanwhile are slowed less
 * (benchmarks/README.md, latency part 8). */
export const SNAPSHOT_DUTY = 0.25;
/** Entries kept in memory below a snapshot so that a briefly lagging follower needs no snapshot. */
export const SNAPSHOT_CATCHUP_ENTRIES = 2_000;

export interface SnapshotPolicy {
  /** Fixed threshold; by default max(SNAPSHOT_EVERY_ENTRIES_DEFAULT, the jobs in the last snapshot).
   * Each member snapshots at its own phase of it (snapshot-schedule.ts), so the interval is every/2
   * to 1.5 every. */
  readonly snapshotEveryEntries?: number;
  /** Jobs encoded between looks at the clock, and how long to encode before yielding (tests). */
  readonly snapshotSliceJobs?: number;
  readonly snapshotSliceMs?: number;
  /** The share of the event loop a snapshot may take, in (0, 1] (default SNAPSHOT_DUTY; 1: no rest). */
  readonly snapshotDuty?: number;
  /** Awaited between slices instead of a turn of the event loop (tests hold the encoder with it). */
  readonly snapshotBetweenSlices?: () => Promise<void>;
  /** Entries kept below a snapshot for lagging followers (default SNAPSHOT_CATCHUP_ENTRIES). */
  readonly snapshotCatchupEntries?: number;
}

export interface SnapshotterOptions extends SnapshotPolicy {
  /** This member's id: its place in the configuration sets its snapshots' phase (snapshot-schedule.ts). */
  readonly id: NodeId;
  readonly applier: Applier;
  readonly storage: MemoryStorage;
  readonly logStore: LogStore;
  readonly snapshots: SnapshotStorePort;
  readonly clock: ClockPort;
  readonly log: Pick<Logger, 'info'>;
  /** False once the core crashed or fail-stopped: what is in flight stops where it is. */
  readonly live: () => boolean;
  /** A snapshot could not be taken or stored: the core fail-stops. */
  readonly fail: (err: unknown) => void;
  /** The accounting store: its records through the snapshot's index are made durable first. */
  readonly accounting?: AccountingPort;
}

export class Snapshotter {
  /** Index of the latest snapshot (taken here or installed from the leader). */
  index: number;
  /** A snapshot being taken (encoded, then stored); null when none. */
  private writing: Promise<void> | null = null;
  private encoder: SnapshotEncoder | null = null;
  /** Jobs in the latest snapshot (taken here or installed); at start, those of the state restored
   * and replayed, read at the first look. Sets the interval until the next one (snapshotInterval). */
  private jobsAtLast: number | undefined;
  /** Milliseconds of rest per millisecond of a snapshot's work (from its duty). */
  private readonly restPerMs: number;
  /** Set by hurry(): no more rests. */
  private hurried = false;

  constructor(
    private readonly o: SnapshotterOptions,
    startIndex: number,
  ) {
    this.index = startIndex;
    this.restPerMs = restPerMs(o.snapshotDuty ?? SNAPSHOT_DUTY);
  }

  /** Jobs left to encode while a snapshot is being encoded, else null. */
  get jobsLeft(): number | null {
    return this.encoder?.jobsLeft ?? null;
  }

  /** Resolves once no snapshot is being taken. */
  async idle(): Promise<void> {
    while (this.writing !== null) await this.writing;
  }

  /**
   * Starts a snapshot when enough entries were applied since the last one (or now, `force`).
   * Without `force` it returns at once; with it, it resolves once the snapshot is stored.
   */
  async maybe(force = false): Promise<void> {
    while (this.writing !== null) {
      if (!force) return;
      await this.writing;
    }
    const a = this.o.applier;
    this.jobsAtLast ??= a.state.jobs.size;
    const every = snapshotInterval(this.o.snapshotEveryEntries, this.jobsAtLast);
    if (a.applied <= Math.max(this.index, this.o.storage.snapshot().meta.index)) return;
    if (!force && !snapshotDue(a.applied, this.index, every, snapshotPhase(this.o.id, a.conf, every))) return;
    const writing = this.take();
    this.writing = writing.then(
      () => {
        this.writing = null;
      },
      (err: unknown) => {
        this.writing = null;
        this.o.fail(err);
      },
    );
    if (force) await this.writing;
  }

  private async take(): Promise<void> {
    const a = this.o.applier;
    const index = a.applied;
    const conf = a.conf;
    // The state as of `index`: entries go on being applied meanwhile (copy-on-write, snapshot.ts),
    // checked as it is written, before anything of it is stored (fail-stop on a bug).
    const check = new StateInvariantWalk(a.state);
    const encoder = new SnapshotEncoder(a.state, (job) => check.job(job.id, job));
    this.encoder = encoder;
    const t0 = this.o.clock.now();
    try {
      await this.encodeInSlices(encoder);
    } finally {
      this.encoder = null;
      encoder.close();
    }
    if (!this.o.live()) return;
    // A snapshot from the leader stored since this one began (it waited for `writing`, but the
    // state machine may install it only later) is newer: this one is dropped, never stored over it.
    if (this.o.storage.snapshot().meta.index >= index) {
      this.o.log.info('dropped a snapshot of our own: a newer one from the leader is stored', {
        index,
        installed: this.o.storage.snapshot().meta.index,
      });
      return;
    }
    const violations = check.finish();
    if (violations.length > 0) throw new StateInvariantError(violations);
    const encodeMs = this.o.clock.now() - t0;
    const data = encoder.bytes();
    const t1 = this.o.clock.now();
    // The jobs cleaned up to `index` are in no state from here on: their records must be durable
    // before a snapshot without them is, and before the log that would replay their cleaning goes.
    if (this.o.accounting !== undefined)
      await storage('writing the accounting store', this.o.accounting.flushedThrough(index));
    if (!this.o.live()) return;
    const snap = this.o.storage.createSnapshot(index, conf, data);
    this.index = index;
    this.jobsAtLast = encoder.jobCount;
    const t2 = this.o.clock.now();
    await storage('storing a snapshot', this.o.snapshots.save(snap.meta, data, this.pacer()));
    if (!this.o.live()) return;
    const t3 = this.o.clock.now();
    await storage('marking the snapshot in the log', this.o.logStore.saveSnapshot({ index, term: snap.meta.term }));
    if (!this.o.live()) return;
    const keepFrom = index - (this.o.snapshotCatchupEntries ?? SNAPSHOT_CATCHUP_ENTRIES);
    if (keepFrom > this.o.storage.firstIndex() && keepFrom <= this.o.storage.snapshot().meta.index)
      this.o.storage.compact(keepFrom);
    const removed = await storage('compacting the log', this.o.logStore.compact(index));
    this.o.log.info('took a snapshot', {
      index,
      bytes: data.byteLength,
      jobs: encoder.jobCount,
      encodeMs: Math.round(encodeMs),
      flushMs: Math.round(t2 - t1),
      storeMs: Math.round(t3 - t2),
      compactMs: Math.round(this.o.clock.now() - t3),
      walSegmentsRemoved: removed,
    });
  }

  /**
   * Runs the encoder to the end, letting the event loop run after every SNAPSHOT_SLICE_MS of
   * encoding, for as long as the duty asks (a slice of t ms, then t * (1 / duty - 1) ms of rest).
   */
  private async encodeInSlices(encoder: SnapshotEncoder): Promise<void> {
    const sliceJobs = this.o.snapshotSliceJobs ?? SNAPSHOT_SLICE_JOBS;
    const sliceMs = this.o.snapshotSliceMs ?? SNAPSHOT_SLICE_MS;
    const rest = this.restPerMs;
    const clock = this.o.clock;
    const between: (ms: number) => Promise<void> = this.o.snapshotBetweenSlices ?? ((ms) => this.rest(ms));
    let sliceStart = clock.now();
    while (!encoder.step(sliceJobs)) {
      const took = clock.now() - sliceStart;
      if (took < sliceMs) continue;
      await between(Math.round(took * rest));
      if (!this.o.live()) return;
      sliceStart = clock.now();
    }
  }

  /** A turn of the event loop, or `ms` milliseconds when more than 0 (and no hurry). */
  private rest(ms: number): Promise<void> {
    return new Promise<void>((r) => {
      if (ms > 0 && !this.hurried) this.o.clock.setTimeout(r, ms);
      else this.o.clock.defer(r);
    });
  }

  /**
   * The node is stopping: no write waits for an answer any more, so a snapshot being taken goes on
   * at full speed (a turn of the event loop between slices and chunks, no rest), and the stop that
   * waits for it is not drawn out by the duty.
   */
  hurry(): void {
    this.hurried = true;
  }

  /**
   * What the store awaits between two pieces of a snapshot of our own: a rest in proportion to the
   * time since the last piece was handed over, at the snapshot's duty, as between encoding slices.
   */
  private pacer(): () => Promise<void> {
    const rest = this.restPerMs;
    const clock = this.o.clock;
    let since = clock.now();
    return async () => {
      await this.rest(Math.round((clock.now() - since) * rest));
      since = clock.now();
    };
  }

  /**
   * Stores a snapshot received from the leader (after any snapshot of our own is done), marks the
   * log store, and hands it to Raft's storage. Resolves with the milliseconds it took.
   */
  async persistReceived(snap: Snapshot): Promise<number> {
    // Waits for a snapshot of our own, then holds `writing` itself (set in the same turn the wait
    // ends), so that no snapshot of our own starts, or is stored over this one, meanwhile.
    while (this.writing !== null) await this.writing;
    const t0 = this.o.clock.now();
    const persist = async (): Promise<void> => {
      await storage('storing a snapshot from the leader', this.o.snapshots.save(snap.meta, snap.data));
      if (!this.o.live()) return;
      await storage(
        'marking the snapshot in the log',
        this.o.logStore.saveSnapshot({ index: snap.meta.index, term: snap.meta.term }),
      );
      if (!this.o.live()) return;
      this.o.storage.applySnapshot(snap);
    };
    const p = persist();
    const done = (): void => {
      this.writing = null;
    };
    this.writing = p.then(done, done);
    await p;
    return this.o.live() ? Math.round(this.o.clock.now() - t0) : 0;
  }

  /** The leader's snapshot at `index` was installed in the state machine. */
  installed(index: number): void {
    this.index = index;
    this.jobsAtLast = this.o.applier.state.jobs.size;
  }
}

/** Milliseconds of rest per millisecond of encoding at `duty` (a share of the event loop in (0, 1]). */
export function restPerMs(duty: number): number {
  if (!(duty > 0 && duty <= 1)) throw new RangeError(`a snapshot's duty must be in (0, 1], not ${duty}`);
  return 1 / duty - 1;
}
