// What the core answers a refused request with: `ProposalError` and its `ProposalRefusal` reason,
// and the result types of propose / proposeConfChange / readIndex / transferLeader. Re-exported by
// raft.ts (the public surface is unchanged).
import type { NodeId } from './types.js';
import { NONE } from './types.js';

export type ProposalRefusal =
  /** This node is not the leader; `leaderHint` is the leader it knows of (0 = none known). */
  | 'not-leader'
  /** A leadership transfer is under way; retry on the new leader. */
  | 'transfer-in-progress'
  /** A membership change is still being applied; retry after it. */
  | 'conf-change-pending'
  /** The membership change does not apply to the current configuration (see `detail`). */
  | 'invalid-conf-change'
  /** Too many uncommitted bytes (followers are slow); retry later. */
  | 'overloaded'
  /** The payload exceeds maxProposalBytes. */
  | 'too-large'
  /** Too many ReadIndex requests are waiting; retry later. */
  | 'too-many-reads'
  /** The requested transferee is not a voter of the current configuration. */
  | 'invalid-transferee';

/** A proposal, read or transfer the core refused, with what the caller can do about it. */
export class ProposalError extends Error {
  override readonly name = 'ProposalError';
  constructor(
    readonly reason: ProposalRefusal,
    readonly leaderHint: NodeId,
    detail = '',
  ) {
    super(
      reason === 'not-leader'
        ? `not the leader${leaderHint !== NONE ? `; the leader is node ${leaderHint}` : '; no leader is known yet, retry shortly'}`
        : `refused: ${reason}${detail ? ` (${detail})` : ''}`,
    );
  }
}

export type ProposeResult = { ok: true; index: number; term: number } | { ok: false; error: ProposalError };
export type RequestResult = { ok: true } | { ok: false; error: ProposalError };
