// The client API's error mapping: ApiFailure (an operation's refusal with its code), an apply
// refusal as the client sees it, and toError, which turns anything an operation throws into the
// error body sent back (an unexpected failure: `internal`, a reference, the details only in the log).

import { randomBytes } from 'node:crypto';
import type { ApiErrorBody, ErrorCode } from '../../api/protocol.js';
import { AuthError } from '../auth.js';
import { NodeUnavailableError, ProposalRejectedError } from '../controller-node.js';
import { notLeaderReply } from '../net/not-leader.js';
import type { RejectCode } from '../../statemachine/facts.js';
import type { ApiContext } from './context.js';

export class ApiFailure extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly leader?: { id: number; address: string },
    /** With `rate-limited`: when the client may try again. */
    readonly retryAfter_ms?: number,
  ) {
    super(message);
  }
}

/** An apply (or admission) refusal as the client sees it. */
export function rejection(code: RejectCode, message: string): ApiFailure {
  return new ApiFailure(
    code === 'not_authorized' ? 'forbidden' : code === 'job_not_found' ? 'not-found' : 'rejected',
    message,
  );
}

/** The error body for whatever serving request `id` (operation `op`) threw. */
export function toError(ctx: ApiContext, err: unknown, op: string, id?: number): ApiErrorBody {
  if (err instanceof ApiFailure && err.code === 'internal') return internalError(ctx, err, op, id);
  if (err instanceof ApiFailure) {
    if (err.code === 'rejected' || err.code === 'forbidden') ctx.metrics?.proposalsRejected.inc();
    if (err.retryAfter_ms !== undefined)
      return { code: err.code, message: err.message, retryAfter_ms: err.retryAfter_ms };
    return err.leader
      ? { code: err.code, message: err.message, leader: err.leader }
      : { code: err.code, message: err.message };
  }
  if (err instanceof AuthError) return { code: 'unauthenticated', message: err.message };
  if (err instanceof ProposalRejectedError) {
    // A permanent refusal of Raft (an invalid membership change, ...): the same request gets the
    // same answer, so it is `rejected`, which clients never retry.
    ctx.metrics?.proposalsRejected.inc();
    return { code: 'rejected', message: err.message };
  }
  if (err instanceof NodeUnavailableError) {
    if (err.code === 'unavailable') return { code: err.code, message: err.message };
    // The core's leader when it refused (a proposal or read on a node that stopped leading).
    return notLeaderReply(ctx.node, err.code === 'not-leader' ? err.leaderId : 0);
  }
  return internalError(ctx, err, op, id);
}

/**
 * An unexpected failure: the client gets `internal`, a generic message and a reference; the
 * details (never sent: they may hold paths, state or other users' data) go to the log with it.
 */
export function internalError(ctx: ApiContext, err: unknown, op: string, id?: number): ApiErrorBody {
  const reference = randomBytes(6).toString('hex');
  const e = err instanceof Error ? err : new Error(String(err));
  ctx.log.error('internal error serving a request', {
    op,
    requestId: id ?? null,
    reference,
    error: e.message,
    stack: e.stack,
  });
  return {
    code: 'internal',
    message: `internal error (reference ${reference}); the controller's log has the details`,
  };
}
