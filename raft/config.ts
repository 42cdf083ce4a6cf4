// The core's configuration: named limits with units, defaults, and `validateConfig()`, which
// refuses unsafe combinations at start (in the spirit of hashicorp/raft's ValidateConfig).
import { RaftConfigError } from './errors.js';
import type { NodeId } from './types.js';

/** Ticks without hearing from a leader before a follower starts an election. The real timeout is
 * drawn uniformly from [ELECTION_TICKS, 2 * ELECTION_TICKS) (Raft paper §5.2). */
export const ELECTION_TICKS = 10;
/** Ticks between a leader's heartbeats. Must be well below ELECTION_TICKS. */
export const HEARTBEAT_TICKS = 1;
/** Upper bound on the bytes of entries in one MsgApp (a single entry bigger than this still goes
 * alone). 1 MiB keeps a WebSocket frame reasonable. */
export const MAX_SIZE_PER_MSG_BYTES = 1024 * 1024;
/** MsgApps in flight to one follower in the replicate state (the pipelining window). */
export const MAX_INFLIGHT_MSGS = 256;
/** Bytes of entries in flight to one follower; caps the window when entries are large. */
export const MAX_INFLIGHT_BYTES = 32 * 1024 * 1024;
/** Bytes of proposed-but-uncommitted entries a leader accepts before refusing proposals
 * ('overloaded'): protects memory when followers are slow. */
export const MAX_UNCOMMITTED_ENTRIES_BYTES = 64 * 1024 * 1024;
/** Bytes of committed entries handed out in one Ready (at least one entry always goes). */
export const MAX_COMMITTED_SIZE_PER_READY_BYTES = 16 * 1024 * 1024;
/** The largest single proposal payload. */
export const MAX_PROPOSAL_BYTES = 8 * 1024 * 1024;
/** ReadIndex requests a leader queues while waiting for heartbeat acknowledgement. */
export const MAX_PENDING_READ_REQUESTS = 4096;
/** Size of one snapshot chunk on the wire (see snapshot-chunks.ts). */
export const SNAPSHOT_CHUNK_BYTES_MAX = 512 * 1024;

export type ReadOnlyOption = 'safe' | 'lease-based';

export interface RaftConfig {
  /** This node's id; never 0. */
  readonly id: NodeId;
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  /** The index the caller's state machine has already applied (on restart: the snapshot index
   * or later). The core never hands out an entry at or below it. */
  readonly applied: number;
  readonly maxSizePerMsgBytes: number;
  readonly maxInflightMsgs: number;
  readonly maxInflightBytes: number;
  readonly maxUncommittedEntriesBytes: number;
  readonly maxCommittedSizePerReadyBytes: number;
  readonly maxProposalBytes: number;
  readonly maxPendingReadRequests: number;
  /** Pre-vote (Raft thesis §9.6): a node checks it could win before raising its term, so a node
   * rejoining from a partition does not disrupt a healthy leader. */
  readonly preVote: boolean;
  /** Check-quorum: a leader that has not heard from a quorum within an election timeout steps
   * down, and followers ignore votes while they have a live leader (leader lease). */
  readonly checkQuorum: boolean;
  /** Successor first: a follower whose leader is lost times out after electionTicks + 1 ticks when
   * it is the leader's successor (the next voter id after the leader's, wrapping), in
   * [electionTicks + 3, 2 * electionTicks) otherwise, so the successor campaigns first and, with an
   * up-to-date log, wins; a follower elected because the successor's log was behind hands
   * leadership to it once caught up (elections.ts handOffToSuccessor). Who leads next is then known
   * in advance: workers dial the controller after the lost leader in their list first. Off: the
   * whole range for everyone (Raft §5.2), and no hand-over. */
  readonly successorFirst: boolean;
  /** 'safe' = ReadIndex confirmed by a heartbeat round; 'lease-based' trusts bounded clock drift
   * and answers from the leader's lease. Off ('safe') by default. */
  readonly readOnlyOption: ReadOnlyOption;
}

export function defaultConfig(id: NodeId, overrides: Partial<RaftConfig> = {}): RaftConfig {
  return {
    id,
    electionTicks: ELECTION_TICKS,
    heartbeatTicks: HEARTBEAT_TICKS,
    applied: 0,
    maxSizePerMsgBytes: MAX_SIZE_PER_MSG_BYTES,
    maxInflightMsgs: MAX_INFLIGHT_MSGS,
    maxInflightBytes: MAX_INFLIGHT_BYTES,
    maxUncommittedEntriesBytes: MAX_UNCOMMITTED_ENTRIES_BYTES,
    maxCommittedSizePerReadyBytes: MAX_COMMITTED_SIZE_PER_READY_BYTES,
    maxProposalBytes: MAX_PROPOSAL_BYTES,
    maxPendingReadRequests: MAX_PENDING_READ_REQUESTS,
    preVote: true,
    checkQuorum: true,
    successorFirst: true,
    readOnlyOption: 'safe',
    ...overrides,
  };
}

function positiveInt(field: string, v: number): void {
  if (!Number.isSafeInteger(v) || v <= 0) throw new RaftConfigError(field, `must be a positive integer, got ${v}`);
}

/** Refuses a configuration that is unsafe or cannot make progress. Throws RaftConfigError. */
export function validateConfig(c: RaftConfig): void {
  positiveInt('id', c.id);
  positiveInt('heartbeatTicks', c.heartbeatTicks);
  positiveInt('electionTicks', c.electionTicks);
  if (c.electionTicks <= c.heartbeatTicks) {
    throw new RaftConfigError(
      'electionTicks',
      `(${c.electionTicks}) must be greater than heartbeatTicks (${c.heartbeatTicks}), or followers time out between heartbeats; use at least 5x heartbeatTicks`,
    );
  }
  if (!Number.isSafeInteger(c.applied) || c.applied < 0) {
    throw new RaftConfigError('applied', `must be a non-negative integer, got ${c.applied}`);
  }
  positiveInt('maxSizePerMsgBytes', c.maxSizePerMsgBytes);
  positiveInt('maxInflightMsgs', c.maxInflightMsgs);
  positiveInt('maxInflightBytes', c.maxInflightBytes);
  if (c.maxInflightBytes < c.maxSizePerMsgBytes) {
    throw new RaftConfigError(
      'maxInflightBytes',
      `(${c.maxInflightBytes}) must be at least maxSizePerMsgBytes (${c.maxSizePerMsgBytes}), or a full message can never be sent`,
    );
  }
  positiveInt('maxUncommittedEntriesBytes', c.maxUncommittedEntriesBytes);
  positiveInt('maxCommittedSizePerReadyBytes', c.maxCommittedSizePerReadyBytes);
  positiveInt('maxProposalBytes', c.maxProposalBytes);
  if (c.maxProposalBytes > c.maxUncommittedEntriesBytes) {
    throw new RaftConfigError(
      'maxProposalBytes',
      `(${c.maxProposalBytes}) must not exceed maxUncommittedEntriesBytes (${c.maxUncommittedEntriesBytes}), or such a proposal could never be accepted`,
    );
  }
  positiveInt('maxPendingReadRequests', c.maxPendingReadRequests);
  if (c.readOnlyOption !== 'safe' && c.readOnlyOption !== 'lease-based') {
    throw new RaftConfigError('readOnlyOption', `must be 'safe' or 'lease-based', got '${String(c.readOnlyOption)}'`);
  }
  if (c.readOnlyOption === 'lease-based' && !c.checkQuorum) {
    throw new RaftConfigError(
      'readOnlyOption',
      "'lease-based' needs checkQuorum: true, or a deposed leader could still serve stale reads from its lease",
    );
  }
}
