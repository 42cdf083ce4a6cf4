// The values that cross the boundary between the pure Raft core and its caller.
// `wal/` persists exactly these (HardState, Entry, SnapshotMeta); the core never touches a disk.
// Changing a field here changes the WAL's on-disk format: do it additively.

/** A controller's identity in the Raft group. 0 means "none" (no vote, no leader). */
export type NodeId = number;
export const NONE: NodeId = 0;

export const enum EntryType {
  /** An opaque command for the state machine (a Cap'n Proto fact), or empty (the leader's no-op). */
  Normal = 0,
  /** A membership change; `data` is the encoded ConfChange the core understands. */
  ConfChange = 1,
}

export interface Entry {
  readonly term: number;
  readonly index: number;
  readonly type: EntryType;
  /** Opaque to Raft and to the WAL: encoded once on the leader, decoded once per apply. */
  readonly data: Uint8Array;
}

/** What must be durable before any message that depends on it is sent (Raft paper, Figure 2). */
export interface HardState {
  readonly term: number;
  readonly vote: NodeId;
  readonly commit: number;
}

/** Group membership: voters and non-voting learners. */
export interface ConfState {
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
}

/** Describes a snapshot: the state machine's state after applying every entry up to `index`. */
export interface SnapshotMeta {
  readonly index: number;
  readonly term: number;
  readonly conf: ConfState;
}

export const EMPTY_HARD_STATE: HardState = { term: 0, vote: NONE, commit: 0 };

/** A snapshot as the core sees it: its metadata plus the state machine's encoded state.
 * A caller whose snapshots are too big to hold in memory may return an empty `data` from
 * `Storage.snapshot()` and let its transport stream the state from its snapshot store, keyed by
 * `meta.index` (see README.md, "Snapshots"). */
export interface Snapshot {
  readonly meta: SnapshotMeta;
  readonly data: Uint8Array;
}

export const EMPTY_CONF_STATE: ConfState = { voters: [], learners: [] };
