// Every operation of the client API but `login` (served before there is a user: api-server.ts), by
// the name a request gives: the one table ApiServer dispatches on.

import type { Op, OpArgs, Request, RequestOf, Session } from '../../api/protocol.js';
import type { ControlResult, OpResult } from '../../api/responses.js';
import type { ControlAction } from '../../statemachine/facts.js';
import { issueToken } from './auth-ops.js';
import { listApps, showApp } from './apps.js';
import { clusterStatus, membership, transferLeader } from './cluster.js';
import { upgrade } from './config.js';
import type { ApiContext } from './context.js';
import { jobHistory, report } from './history.js';
import { controlHost, listHosts } from './hosts.js';
import { canSeeJob, control, listJobs, modify, showJob, submit } from './jobs.js';
import { peekJob } from './peek.js';
import { getPreset, listPresets } from './presets.js';
import { listQueues, showQueue } from './queues.js';
import { changeRole, listRoles } from './roles.js';
import type { WriteOp } from './steps.js';

type UserOp = Exclude<Op, 'login'>;

/** An operation, given the user the request's token names. */
type Operation<O extends UserOp> = (ctx: ApiContext, user: string, req: RequestOf<O>) => Promise<OpResult<O>>;

/** A write, given the request's session and arguments. */
const writing =
  <O extends UserOp>(op: WriteOp<O, OpResult<O>>) =>
  (ctx: ApiContext, user: string, req: { session?: Session; args: OpArgs<O> }): Promise<OpResult<O>> =>
    op(ctx, user, req.session, req.args);

type ControlOp =
  'jobs.kill' | 'jobs.requeue' | 'jobs.restart' | 'jobs.hold' | 'jobs.release' | 'jobs.suspend' | 'jobs.resume';

/** jobs.kill, jobs.hold, ...: the action is the operation's name after `jobs.`. */
const controlJob = (ctx: ApiContext, user: string, req: RequestOf<ControlOp>): Promise<ControlResult> =>
  control(ctx, user, req.session, req.op.slice(5) as Exclude<ControlAction, 'dependencyNever'>, req.args.id);

const OPERATIONS: { readonly [O in UserOp]: Operation<O> } = {
  'jobs.submit': writing(submit),
  'jobs.modify': writing(modify),
  'config.upgrade': writing(upgrade),
  'jobs.history': (ctx, user, req) => jobHistory(ctx, req, (config, job) => canSeeJob(config, user, job)),
  'hosts.close': (ctx, user, req) => controlHost(ctx, user, req.session, true, req.args),
  'hosts.open': (ctx, user, req) => controlHost(ctx, user, req.session, false, req.args),
  'cluster.status': async (ctx, user) => clusterStatus(ctx, user),
  'cluster.transferLeader': (ctx, user, req) => transferLeader(ctx, user, req.args),
  'token.issue': (ctx, user, req) => issueToken(ctx, user, req.args),
  'jobs.list': listJobs,
  'jobs.show': showJob,
  'jobs.peek': peekJob,
  'jobs.kill': controlJob,
  'jobs.requeue': controlJob,
  'jobs.restart': controlJob,
  'jobs.hold': controlJob,
  'jobs.release': controlJob,
  'jobs.suspend': controlJob,
  'jobs.resume': controlJob,
  'accounting.report': report,
  'apps.list': listApps,
  'apps.show': showApp,
  'presets.list': listPresets,
  'presets.get': getPreset,
  'hosts.list': listHosts,
  'queues.list': listQueues,
  'queues.show': showQueue,
  'cluster.addMember': membership,
  'cluster.removeMember': membership,
  'roles.list': listRoles,
  'roles.set': changeRole,
  'roles.delete': changeRole,
};

/** Serves `req` for `user` (the operation it names, from the table). */
export function operate(
  ctx: ApiContext,
  user: string,
  req: Exclude<Request, { op: 'login' }>,
): Promise<OpResult<UserOp>> {
  // TypeScript cannot correlate `req.op` with the table's entry for it (a union of functions): the
  // table's type checks each entry against its operation, so this one call is widened by hand.
  const op = OPERATIONS[req.op] as (ctx: ApiContext, user: string, req: Request) => Promise<OpResult<UserOp>>;
  return op(ctx, user, req);
}
