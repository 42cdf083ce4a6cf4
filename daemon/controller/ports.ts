// The controller core's seams, in the style of hashicorp/raft's interfaces: the log store, the
// snapshot store, the peer transport and the clock. The daemon passes the real ones (the WAL, the
// LevelDB snapshot store, the WebSocket peer links, Node's timers); the deterministic simulator
// passes in-memory ones driven by its virtual clock. Everything the core does to the world goes
// through one of these, so the same Ready handling runs in both.

import type { Entry, HardState, SnapshotMeta } from '../../raft/types.js';
import type { Job } from '../../statemachine/state.js';

/** What a log store read back at start: the hard state, the snapshot mark and the entries after it. */
export interface RecoveredLogImage {
  readonly hardState: HardState;
  /** The latest snapshot mark (index 0, term 0 when none). */
  readonly snapshot: { readonly index: number; readonly term: number };
  /** Contiguous entries, all above the snapshot mark the caller passes to `entriesAfter`. */
  readonly entries: readonly Entry[];
  /** Present when a torn tail was cut at start-up (for the log line). */
  readonly tornTail?: unknown;
}

/** The durable Raft log (the WAL in the daemon). Every promise resolves once the write is durable. */
export interface LogStore {
  /** What was durable at open. */
  readonly recovered: RecoveredLogImage;
  /**
   * The recovered entries above `snapshotIndex`. Throws a typed error naming the data directory and
   * the remedy (WalGapError) when entries between the snapshot and the log's first entry are missing.
   */
  entriesAfter(snapshotIndex: number): Entry[];
  /**
   * Appends entries and/or a hard state, durably. `startNow`: when no write is under way, the write
   * and its fdatasync start within this call, not after the current microtasks (a lone appender
   * that has other work to do before it awaits: the leader sending to its followers meanwhile).
   */
  save(hardState: HardState | undefined, entries: readonly Entry[], startNow?: boolean): Promise<void>;
  /** Records that a snapshot at this index and term is stored (entries up to it may be dropped). */
  saveSnapshot(mark: { readonly index: number; readonly term: number }): Promise<void>;
  /** Drops what the snapshot at `snapshotIndex` covers; resolves with the number of pieces removed. */
  compact(snapshotIndex: number): Promise<number>;
  close(): Promise<void>;
}

/** The durable snapshot store (LevelDB in the daemon). */
export interface SnapshotStorePort {
  /** The current snapshot's metadata, or undefined when none was ever stored. */
  latestMeta(): SnapshotMeta | undefined;
  readAll(): Promise<{ readonly meta: SnapshotMeta; readonly data: Uint8Array }>;
  /**
   * Stores a snapshot; it becomes current atomically once the promise resolves. A store that writes
   * it in pieces awaits `pace` between two of them (a snapshot of our own leaves the disk and the
   * cores to the log's writes meanwhile: snapshotter.ts).
   */
  save(meta: SnapshotMeta, data: Uint8Array, pace?: () => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

/** The links to the other controllers. Frames are the Raft codec's bytes (daemon/raft-codec.ts). */
export interface PeerPort {
  setPeers(peers: ReadonlyArray<{ readonly id: number; readonly address: string }>): void;
  /** Queues a frame; false when the link is down or over its bound (the frame is dropped). */
  send(to: number, frame: Uint8Array): boolean;
  /** Sends frames as the link drains; true when all were handed to the link. */
  stream(to: number, frames: Iterable<Uint8Array>): Promise<boolean>;
  connected(to: number): boolean;
  /**
   * Closes the link on which peer `from`'s frames arrive: the one delivering the current frame when
   * called while a frame is being handled, else every link from `from`. Called on a frame the guard
   * refused (frame-guard.ts); `reason` goes with the close. The peer may dial again.
   */
  closeInbound(from: number, reason: string): void;
  close(): void;
}

export interface TimerHandle {
  /** Opaque to the core. */
  readonly id: unknown;
}

/** Time and scheduling. The daemon's is Node's; the simulator's is virtual and deterministic. */
export interface ClockPort {
  /** Milliseconds (monotonic enough for durations; the simulator's virtual time). */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(h: TimerHandle): void;
  setInterval(fn: () => void, ms: number): TimerHandle;
  clearInterval(h: TimerHandle): void;
  /** Runs `fn` soon, after the current turn (setImmediate in the daemon). */
  defer(fn: () => void): void;
}

/**
 * Where the jobs that leave the replicated state go (daemon/accounting/): the applier hands it the
 * jobs each CleanFact removed, in log order, and the snapshotter waits for `flushedThrough` before
 * it stores a snapshot, so a job is never gone from every durable state and missing from it.
 */
export interface AccountingPort {
  record(index: number, timeMs: number, jobs: readonly Job[]): void;
  /** Resolves once the records of every clean at an index ≤ `index` are durable. */
  flushedThrough(index: number): Promise<void>;
  /** A snapshot from the leader replaced the state at `afterIndex` by the one at `throughIndex`. */
  snapshotInstalled(afterIndex: number, throughIndex: number): void;
}

/** Where an entry is on one node, for the opt-in per-hop trace of a submit (daemon/submit-trace.ts). */
export type TraceHop =
  /** The leader appended it (a proposal). */
  | 'propose'
  /** A Ready carrying it as a new entry was taken. */
  | 'ready'
  /** The leader sent it to follower `peer` in a MsgApp. */
  | 'send-app'
  /** This node started / finished persisting it (the WAL save, fdatasync included). */
  | 'wal-start'
  | 'wal-done'
  /** A follower received it from the leader `peer`. */
  | 'recv-app'
  /** A follower acknowledged the log through `last` to the leader `peer`. */
  | 'send-resp'
  /** The leader heard from `peer` that its log matches through `last`. */
  | 'recv-resp'
  /** A Ready carrying it as committed was taken. */
  | 'commit'
  /** The state machine applied it here. */
  | 'applied';

/**
 * Opt-in timestamps of replicated entries as they pass each hop (`XCE_TRACE_DIR`, see
 * daemon/submit-trace.ts). The core calls it only when one is given; it reads its own clock and
 * changes nothing in the core's behaviour.
 */
export interface TracePort {
  /** Entries `first`..`last` passed `hop` now; `peer` is the other node involved (0: none). */
  hop(hop: TraceHop, first: number, last: number, peer: number): void;
}
