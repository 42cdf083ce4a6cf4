// The client API's job operations: jobs.submit (and its dry run), jobs.list, jobs.show and
// jobs.kill / jobs.requeue / jobs.restart; who may see a job, and whether its profile's values
// are hidden from the viewer.

import {
  LIST_LIMIT_DEFAULT,
  type JobSpec as ApiJobSpec,
  type OpArgs,
  type RequestOf,
  type Session,
} from '../../api/protocol.js';
import type {
  ControlResult,
  DryRunResult,
  JobList,
  JobShow,
  JobSummary,
  ModifyResult,
  SubmitResult,
} from '../../api/responses.js';
import { admitSubmit, type Admission } from '../../statemachine/admission.js';
import type { ApplyResult, ControlAction, JobSpec } from '../../statemachine/facts.js';
import { decodedSpec } from '../../statemachine/lazy-parts.js';
import { pendReason, submitFactFor } from '../../statemachine/jobs.js';
import { hideProfileValues, jobDetails } from '../../statemachine/queries.js';
import { arrayDetails, pageJobRows } from '../../statemachine/array-queries.js';
import { elementsOf } from '../../statemachine/arrays.js';
import { formatJobId } from '../../model/job-id.js';
import { peekSession } from '../../statemachine/sessions.js';
import type { Job } from '../../statemachine/state.js';
import type { ClusterConfig } from '../../model/config-types.js';
import { JobValueError, jobSpecOf } from '../../model/job-own-values.js';
import { profileNameForSubmit, profileNotDefinedReason, resolveProfile } from '../../model/profiles.js';
import { mayViewProfile } from '../../model/rbac.js';
import type { ApiContext } from './context.js';
import { ApiFailure, rejection } from './errors.js';
import {
  allowed,
  check,
  latestConfig,
  readConfig,
  requireConfig,
  requireLeader,
  write,
  type WriteOp,
} from './steps.js';
import { arraySummary, dryRunView, jobSummary } from './views.js';
import { cleanedJob, historicDetails, historyRows } from './history.js';

export { LIST_LIMIT_DEFAULT } from '../../api/protocol.js';
/** The queue of a job submitted without `-q` (LSF's DEFAULT_QUEUE), when the configuration has it. */
export const DEFAULT_QUEUE = 'normal';
/** pendReason's text for a job that merges fine and only waits for a scheduling pass. */
const WAITING = 'waiting for the scheduler';

/**
 * On the leader, in this order: the session table (a retry of a write already applied gets its
 * first answer, as apply would give it), then admission (statemachine/admission.ts, the one apply
 * uses), then the proposal. A refusal is only given from state at the commit point: when the
 * local state refuses, the leader first catches up (ReadIndex) and judges again.
 */
export const submit: WriteOp<'jobs.submit', SubmitResult | DryRunResult> = async (ctx, user, session, args) => {
  requireLeader(ctx);
  const dryRun = args.dryRun === true;
  let prior = dryRun ? null : priorSubmit(ctx, session, user);
  if (prior !== null) return prior;
  let a = admit(ctx, user, args);
  if (!a.ok) {
    await ctx.node.readBarrier();
    prior = dryRun ? null : priorSubmit(ctx, session, user);
    if (prior !== null) return prior;
    a = admit(ctx, user, args);
    if (!a.ok) throw rejection(a.code, a.message);
  }
  if (dryRun) return dryRunView(a);
  return submitAnswer(ctx, await write(ctx, session, a.submit));
};

/** The job's own values as the log records them (the one converter, model/job-own-values.ts). */
function toJobSpec(job: ApiJobSpec): JobSpec {
  try {
    return jobSpecOf(job);
  } catch (e) {
    if (e instanceof JobValueError) throw new ApiFailure('bad-request', `job.${e.field}: ${e.message}`);
    throw e;
  }
}

function admit(ctx: ApiContext, user: string, args: OpArgs<'jobs.submit'>): Admission {
  const config = requireConfig(ctx);
  const spec = toJobSpec(args.job);
  return admitSubmit(
    config,
    user,
    submitFactFor(config, user, args.job.queue ?? DEFAULT_QUEUE, args.job.app ?? null, spec, {
      dependency: args.job.dependency ?? null,
      dependencyKill: args.job.dependencyNever === 'kill',
    }),
  );
}

/** The answer the state already holds for this session's request, or null when it holds none (another user's session: refused). */
function priorSubmit(ctx: ApiContext, session: Session | undefined, user: string): SubmitResult | null {
  if (session === undefined) return null;
  const state = ctx.node.state;
  const seen = peekSession(state.sessions, session.client, session.seq, Math.max(state.logTimeMs, ctx.now()), user);
  return seen.kind === 'new' ? null : submitAnswer(ctx, seen.result);
}

/** A submit's apply result as the client sees it: the job, its profile as recorded, its queue. */
function submitAnswer(ctx: ApiContext, r: ApplyResult): SubmitResult {
  if (r.kind === 'rejected') throw rejection(r.code, r.message);
  if (r.kind !== 'submitted') throw new ApiFailure('internal', `unexpected apply result ${r.kind} for a submit`);
  const state = ctx.node.state;
  const array = state.arrays.get(r.jobId);
  if (array !== undefined)
    return { jobId: r.jobId, profile: array.profile, queue: array.queue, arraySize: array.indices.length };
  const job = state.jobs.get(r.jobId);
  return { jobId: r.jobId, profile: job?.profile ?? null, queue: job?.queue ?? null };
}

export function canSeeJob(config: ClusterConfig, user: string, job: Job): boolean {
  return job.user === user || allowed(config, user, 'job:view');
}

/**
 * Whether `user`, who may see the job, is shown it without its profile's values: another user's
 * job whose profile the user holds no app:view on (statemachine/queries.ts `hideProfileValues`).
 * The owner always sees their own job whole: they ran it with app:use, and it runs with those
 * values anyway.
 */
function hidesProfile(config: ClusterConfig, user: string, job: Job): boolean {
  return job.user !== user && job.profile !== null && !mayViewProfile(config, user, job.profile);
}

/** The state's pend reason, made precise by the scheduler's when the job only waits for it. */
function pendReasonOf(ctx: ApiContext, job: Job): string | null {
  const node = ctx.node;
  const r = pendReason(node.state, job);
  if (r !== WAITING) return r;
  if (node.isLeader()) return ctx.schedulerReason(job.id) ?? r;
  const lead = node.leaderId();
  return lead ? `${r} (the scheduler's reason is shown by the leader, node ${lead})` : r;
}

export async function listJobs(ctx: ApiContext, user: string, req: RequestOf<'jobs.list'>): Promise<JobList> {
  const config = await readConfig(ctx, req);
  const a = req.args;
  const state = ctx.node.state;
  // A job names `--app` by its recorded profile, or (to a viewer of that profile) the one its record ran.
  const names = (j: Job, app: string, hidden: boolean): boolean =>
    j.profile === app || (!hidden && j.record?.profile === app);
  const since = a.sinceMs;
  const match = (j: Job): boolean =>
    (a.state === undefined || j.state === a.state) &&
    (a.user === undefined || j.user === a.user) &&
    (a.queue === undefined || j.queue === a.queue) &&
    canSeeJob(config, user, j) &&
    (a.app === undefined || names(j, a.app, hidesProfile(config, user, j))) &&
    (since === undefined || j.submitTimeMs >= since || j.endTimeMs >= since);
  // Newest first, as `bjobs` users expect to see their latest jobs; `after` pages on.
  const limit = a.limit ?? LIST_LIMIT_DEFAULT;
  const page = pageJobRows(state, match, limit, a.after ?? null, a.expand === true);
  const out: JobSummary[] = page.rows.map((row) => {
    if (row.kind === 'job') {
      const j = row.job;
      return jobSummary(j, j.state === 'PEND' ? pendReasonOf(ctx, j) : null, hidesProfile(config, user, j));
    }
    return arraySummary(row.array, row.elements);
  });
  // `--all` / `--since`: after the last page of the state, the jobs that left it, from this
  // controller's accounting store (up to the same limit; `--after` pages the state's jobs only).
  if ((a.all === true || since !== undefined) && page.next === null && out.length < limit) {
    const visible = (j: Job): { hidden: boolean } | null =>
      canSeeJob(config, user, j) ? { hidden: hidesProfile(config, user, j) } : null;
    out.push(...(await historyRows(ctx, a, limit - out.length, visible)));
  }
  // `--app P` for a profile that is not defined, or that the user may not view, is refused in the
  // same words either way (a refusal must not tell which profiles exist), unless a job the user
  // may see names P: then its name is no secret (the APP column shows it) and those jobs are listed.
  if (
    page.total === 0 &&
    a.app !== undefined &&
    !(resolveProfile(config, a.app) !== null && mayViewProfile(config, user, a.app))
  ) {
    const app = a.app;
    const named = [...state.jobs.values()].some(
      (j) => canSeeJob(config, user, j) && names(j, app, hidesProfile(config, user, j)),
    );
    if (!named) throw new ApiFailure('not-found', profileNotDefinedReason(app));
  }
  return { jobs: out, total: page.total, next: page.next };
}

export async function showJob(ctx: ApiContext, user: string, req: RequestOf<'jobs.show'>): Promise<JobShow> {
  const config = await readConfig(ctx, req);
  const job = ctx.node.state.jobs.get(req.args.id);
  const array = job === undefined ? ctx.node.state.arrays.get(req.args.id) : undefined;
  if (array !== undefined) {
    const d = arrayDetails(ctx.node.state, array.id);
    const first = elementsOf(ctx.node.state, array)[0];
    if (d === null || first === undefined || !canSeeJob(config, user, first))
      throw new ApiFailure('not-found', `job ${req.args.id} does not exist`);
    return hidesProfile(config, user, first) ? hideProfileValues(d) : d;
  }
  if (job === undefined) {
    // A job that left the state is shown from this controller's accounting store.
    const stored = await cleanedJob(ctx, req.args.id);
    if (stored === null || !canSeeJob(config, user, stored.job))
      throw new ApiFailure('not-found', `job ${req.args.id} does not exist`);
    const d = historicDetails(ctx, stored);
    return hidesProfile(config, user, stored.job) ? { ...hideProfileValues(d), history: d.history! } : d;
  }
  if (!canSeeJob(config, user, job)) throw new ApiFailure('not-found', `job ${req.args.id} does not exist`);
  const d = jobDetails(ctx.node.state, req.args.id);
  if (d === null) throw new ApiFailure('not-found', `job ${req.args.id} does not exist`);
  const shown = d.state !== 'PEND' ? d : { ...d, pendReason: pendReasonOf(ctx, job) };
  return hidesProfile(config, user, job) ? hideProfileValues(shown) : shown;
}

/**
 * jobs.kill, jobs.requeue, jobs.restart, jobs.hold, jobs.release, jobs.suspend, jobs.resume: another
 * user's job needs job:control; a rerun needs what a new submit would. Whether the job's state
 * allows the action is apply's judgement (apply-control.ts), given in its words.
 */
export async function control(
  ctx: ApiContext,
  user: string,
  session: Session | undefined,
  action: Exclude<ControlAction, 'dependencyNever'>,
  id: number,
): Promise<ControlResult> {
  // A new leader may not have applied the submit yet: read at the commit point first, or a job
  // acknowledged before a failover would look missing (the drill caught this).
  const config = await latestConfig(ctx);
  const state = ctx.node.state;
  // A whole job array is controlled by its id (each element it applies to), an element by its own.
  const array = state.arrays.get(id);
  const job = array !== undefined ? elementsOf(state, array)[0] : state.jobs.get(id);
  if (job === undefined || !canSeeJob(config, user, job))
    throw new ApiFailure('not-found', `job ${formatJobId(id)} does not exist`);
  if (job.user !== user) check(config, user, 'job:control');
  if (action === 'restart' || action === 'requeue') checkRerun(config, user, job);
  await write(ctx, session, { kind: 'control', jobId: id, action, user });
  return { jobId: id, action };
}

/**
 * jobs.modify (`bmod`): the job's values with the changes applied, proposed as a ModifyFact. Apply
 * (apply-modify.ts) refuses a job that is not pending and admits the new values as a submit
 * (admission.ts: queue:submit on the queue, app:use on the profile, the additive rule against it),
 * with the same errors as a submit.
 */
export const modify: WriteOp<'jobs.modify', ModifyResult> = async (ctx, user, session, args) => {
  const config = await latestConfig(ctx);
  const job = ctx.node.state.jobs.get(args.id);
  if (job === undefined || !canSeeJob(config, user, job))
    throw new ApiFailure('not-found', `job ${args.id} does not exist`);
  if (job.user !== user) check(config, user, 'job:control');
  const c = args.changes;
  let given: JobSpec;
  try {
    given = jobSpecOf({ ...c, command: ['-'] });
  } catch (e) {
    if (e instanceof JobValueError) throw new ApiFailure('bad-request', `changes.${e.field}: ${e.message}`);
    throw e;
  }
  const old = decodedSpec(job.spec);
  const env = new Map(old.env.map((e) => [e.name, e.value]));
  for (const e of given.env) env.set(e.name, e.value);
  const spec: JobSpec = {
    ...old,
    resreq: c.resreq !== undefined ? given.resreq : old.resreq,
    tasks: c.tasks !== undefined ? given.tasks : old.tasks,
    jobName: c.name !== undefined ? given.jobName : old.jobName,
    env: [...env]
      .map(([name, value]) => ({ name, value }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    limits: { ...old.limits, ...given.limits },
  };
  const result = await write(ctx, session, {
    kind: 'modify',
    jobId: job.id,
    user,
    queue: c.queue ?? job.queue,
    profile: c.app !== undefined ? profileNameForSubmit(config, c.app) : job.profile,
    profileRequested: c.app !== undefined ? c.app : job.profileRequested,
    spec,
  });
  if (result.kind !== 'modified')
    throw new ApiFailure('internal', `unexpected apply result ${result.kind} for a modify`);
  const ev = ctx.node.state.jobs.get(job.id)?.events.findLast((e) => e.action === 'modify');
  return { jobId: job.id, changes: ev?.detail ?? '', user: ev?.user ?? user, timeMs: ev?.timeMs ?? 0 };
};

/** The brief: restart re-checks app:use for the job's profile (and queue:submit), as a new submit would. */
function checkRerun(config: ClusterConfig, user: string, job: Job): void {
  const r = job.profile === null ? null : resolveProfile(config, job.profile);
  if (job.profile !== null && r === null) throw new ApiFailure('rejected', profileNotDefinedReason(job.profile));
  check(config, user, 'queue:submit', { type: 'queue', value: job.queue });
  if (r !== null && !allowed(config, user, 'app:use', { type: 'app', value: r.profile.name })) {
    // As at submit (admission.ts): a profile the user may neither use nor view is answered as not defined.
    if (job.profile !== null && !mayViewProfile(config, user, job.profile))
      throw new ApiFailure('rejected', profileNotDefinedReason(job.profile));
    check(config, user, 'app:use', { type: 'app', value: r.profile.name });
  }
}
