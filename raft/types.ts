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
