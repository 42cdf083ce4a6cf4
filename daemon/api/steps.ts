// The steps the client API's operations share: the configuration they need, the RBAC check made
// early (apply checks again, authoritatively), the read barrier (ReadIndex unless the client asks
// for a stale read), the leader check and the proposal of a fact.

import type { Op, OpArgs, Request, Session } from '../../api/protocol.js';
import { encodeFact } from '../../statemachine/facts-codec.js';
import type { ApplyResult, Fact, FactBody } from '../../statemachine/facts.js';
import { authorize, type AuthzScope } from '../../model/rbac.js';
import type { ClusterConfig, Permission } from '../../model/config-types.js';
import { notLeaderReply } from '../net/not-leader.js';
import type { ApiContext } from './context.js';
import { ApiFailure, rejection } from './errors.js';

export function requireConfig(ctx: ApiContext): ClusterConfig {
  const c = ctx.config();
  if (c === null)
    throw new ApiFailure(
      'unavailable',
      'the cluster has no configuration yet (the leader applies it at first start); retry shortly',
    );
  return c;
}

/** Throws `forbidden`, saying why, unless `user` holds `permission` (on `scope`). */
export function check(config: ClusterConfig, user: string, permission: Permission, scope?: AuthzScope): void {
  const r = authorize(config, user, permission, scope);
  if (!r.allowed) throw new ApiFailure('forbidden', r.reason);
}

export function allowed(config: ClusterConfig, user: string, permission: Permission, scope?: AuthzScope): boolean {
  return authorize(config, user, permission, scope).allowed;
}

/** A linearizable read waits for the commit point (ReadIndex); a `stale` one reads this node's state as it is. */
export async function read(ctx: ApiContext, req: Request): Promise<void> {
  if (!req.stale) await ctx.node.readBarrier();
}

/** The configuration in force, read as the request asks (`read`); `unavailable` before the first one. */
export async function readConfig(ctx: ApiContext, req: Request): Promise<ClusterConfig> {
  await read(ctx, req);
  return requireConfig(ctx);
}

/**
 * The configuration at the commit point, for a write: a new leader may not have applied the latest
 * facts yet, so it reads past the barrier (ReadIndex) first; `unavailable` before the first one.
 */
export async function latestConfig(ctx: ApiContext): Promise<ClusterConfig> {
  await ctx.node.readBarrier();
  return requireConfig(ctx);
}

/** An operation that proposes a fact: the asking user, the request's session (exactly once) and its arguments. */
export type WriteOp<O extends Op, R> = (
  ctx: ApiContext,
  user: string,
  session: Session | undefined,
  args: OpArgs<O>,
) => Promise<R>;

/** A follower answers `not-leader` with the leader's address (or `no-leader`): it never judges a write. */
export function requireLeader(ctx: ApiContext): void {
  if (ctx.node.isLeader()) return;
  const reply = notLeaderReply(ctx.node);
  throw new ApiFailure(reply.code, reply.message, reply.leader);
}

/** Proposes `body` on the leader with the request's session; an apply refusal is thrown as the client sees it. */
export async function write(ctx: ApiContext, session: Session | undefined, body: FactBody): Promise<ApplyResult> {
  requireLeader(ctx);
  const fact: Fact = { clientId: session?.client ?? null, sequence: session?.seq ?? 0, timeMs: ctx.now(), body };
  ctx.metrics?.proposals.inc();
  const result = await ctx.node.propose(encodeFact(fact));
  if (result.kind === 'rejected') throw rejection(result.code, result.message);
  return result;
}
