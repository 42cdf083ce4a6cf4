// What the controller core answers when it cannot do what was asked, split by what the caller can
// do about it: retry (on this node later, or on the leader), give up (a permanent refusal), or
// restart the process (a fail-stop).

import type { ProposalError, ProposalRefusal } from '../../raft/raft.js';
import { RaftInvariantError } from '../../raft/errors.js';
import { StateInvariantError } from '../../statemachine/invariants.js';

/** Retryable: this node cannot serve the request now; the same request may succeed later or on
 * the leader (`leaderId`, 0 when none is known). */
export class NodeUnavailableError extends Error {
  override readonly name = 'NodeUnavailableError';
  constructor(
    readonly code: 'not-leader' | 'no-leader' | 'unavailable',
    message: string,
    readonly leaderId = 0,
  ) {
    super(message);
  }
}

/** Permanent: Raft refused the request itself (an invalid membership change, an unknown
 * transferee, a proposal over the size limit). Sending it again gets the same answer; the API
 * answers it with code `rejected`, which clients never retry. */
export class ProposalRejectedError extends Error {
  override readonly name = 'ProposalRejectedError';
  readonly code = 'rejected';
  constructor(
    readonly reason: ProposalRefusal,
    message: string,
  ) {
    super(message);
  }
}

/** Refusals that say nothing about the request, only about the moment: overload and leadership
 * changes (a membership change still being applied counts: it is applied within a round trip). */
const RETRYABLE_REFUSALS: ReadonlySet<ProposalRefusal> = new Set<ProposalRefusal>([
  'not-leader',
  'transfer-in-progress',
  'overloaded',
  'too-many-reads',
  'conf-change-pending',
]);

/** The typed error for a refusal of the Raft core (`notLeader` builds the not-leader answer). */
export function refusalError(
  err: ProposalError,
  notLeader: () => NodeUnavailableError,
): NodeUnavailableError | ProposalRejectedError {
  if (err.reason === 'not-leader') return notLeader();
  if (RETRYABLE_REFUSALS.has(err.reason)) return new NodeUnavailableError('unavailable', `${err.message}; retry`);
  return new ProposalRejectedError(err.reason, err.message);
}

/** A rejection of the log store or the snapshot store (a failed fsync, a full disk, a closed
 * store): marks the error as a storage failure for the fail-stop line. */
export class StorageFailure extends Error {
  override readonly name = 'StorageFailure';
  constructor(
    readonly operation: string,
    override readonly cause: unknown,
  ) {
    super(`${operation}: ${describe(cause)}`);
  }
}

/** Wraps a store operation so that its rejection is known to be a storage failure. */
export function storage<T>(operation: string, p: Promise<T>): Promise<T> {
  return p.catch((err: unknown) => {
    throw new StorageFailure(operation, err);
  });
}

/**
 * The controller stopped for good (fail-stop): its durable state or its in-memory state can no
 * longer be trusted, so it serves nothing more. `xcectld` exits non-zero on it and its supervisor
 * restarts it, which recovers from the data directory (or refuses to start, naming the remedy).
 */
export class ControllerFatalError extends Error {
  override readonly name = 'ControllerFatalError';
  readonly kind: 'storage' | 'raft-invariant' | 'state-invariant' | 'internal';
  constructor(
    readonly nodeId: number,
    readonly dataDir: string,
    override readonly cause: unknown,
  ) {
    const kind = fatalKind(cause);
    const inner = cause instanceof StorageFailure ? cause.cause : cause;
    super(
      `controller ${nodeId} stopped (fail-stop) on ${KIND_TEXT[kind]}: ${describe(inner)}` +
        `${cause instanceof StorageFailure ? ` (during ${cause.operation})` : ''}. Data directory: ${dataDir}. ` +
        `It no longer ticks, votes, replicates or serves clients and workers; restart it (xcectld exits non-zero for its supervisor to do so).`,
    );
    this.kind = kind;
  }
}

const KIND_TEXT: Record<ControllerFatalError['kind'], string> = {
  storage: 'a storage failure',
  'raft-invariant': 'a Raft invariant violation',
  'state-invariant': 'a state invariant violation',
  internal: 'an unexpected internal error',
};

function fatalKind(cause: unknown): ControllerFatalError['kind'] {
  if (cause instanceof StorageFailure) return 'storage';
  if (cause instanceof RaftInvariantError) return 'raft-invariant';
  if (cause instanceof StateInvariantError) return 'state-invariant';
  return 'internal';
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
