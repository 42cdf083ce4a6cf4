// The client API's reads of jobs that left the replicated state: `jobs show` and `jobs list --all`
// fall back to this controller's accounting store (daemon/accounting/), `jobs history` gives a
// job's events with their times (like bhist) from the state or from the store, and
// `accounting.report` adds them up (like bacct). A controller answers from its own store: one that
// caught up by a snapshot says which log range it never applied, and where to ask instead.

import type { OpArgs, RequestOf } from '../../api/protocol.js';
import type { AccountingReport, JobEvent, JobHistory, JobShow, JobSummary } from '../../api/responses.js';
import { jobDetails } from '../../statemachine/queries.js';
import { arrayDetails } from '../../statemachine/array-queries.js';
import { elementsOf, makeArray } from '../../statemachine/arrays.js';
import { decodedSpec } from '../../statemachine/lazy-parts.js';
import { arrayIdOf, arrayIndexOf, isElementId } from '../../model/job-id.js';
import { emptyState, isRunning, type Job } from '../../statemachine/state.js';
import type { ClusterConfig } from '../../model/config-types.js';
import { accountingReport } from '../accounting/report.js';
import type { AccountingStore, StoredJob } from '../accounting/store.js';
import type { ApiContext } from './context.js';
import { ApiFailure } from './errors.js';
import { check, readConfig, requireConfig } from './steps.js';
import { jobSummary } from './views.js';

/** The store, or why there is none (its path and how to rebuild it). */
function storeOf(ctx: ApiContext): AccountingStore {
  const store = ctx.node.accounting;
  if (store === null)
    throw new ApiFailure(
      'unavailable',
      ctx.node.accountingError ?? `node ${ctx.node.id} has no accounting store yet; retry shortly`,
    );
  return store;
}

/**
 * A job that is not in the state, from this controller's store; null when the job never existed.
 * A job that left the state but is not in the store is answered with why (a log range this
 * controller caught up on by snapshot, or accounting_retention).
 */
export async function cleanedJob(ctx: ApiContext, id: number): Promise<StoredJob | null> {
  // An element's id is above every plain id: its array's id says whether it was handed out.
  if ((isElementId(id) ? arrayIdOf(id) : id) >= ctx.node.state.nextJobId) return null;
  const store = storeOf(ctx);
  const stored = await store.get(id);
  if (stored !== null) return stored;
  const gaps = store.gaps;
  const where = gaps.map(([a, b]) => `${a + 1}..${b}`).join(', ');
  throw new ApiFailure(
    'not-found',
    gaps.length > 0
      ? `job ${id} left the state, and node ${ctx.node.id} has no record of it: this controller caught up by a snapshot over log indexes ${where} and keeps no history of the jobs cleaned there (or it is older than accounting_retention); ask another controller`
      : `job ${id} left the state and its record is older than accounting_retention (node ${ctx.node.id})`,
  );
}

/**
 * A job array whose elements all left the state, from this controller's store (its elements in
 * index order); null when `id` is no such array (a plain job, or one never submitted).
 */
export async function cleanedArray(ctx: ApiContext, id: number): Promise<StoredJob[] | null> {
  if (isElementId(id) || id >= ctx.node.state.nextJobId || ctx.node.accounting === null) return null;
  const elements = await ctx.node.accounting.elementsOf(id);
  return elements.length === 0 ? null : elements;
}

/** A cleaned array's details (`jobs show ID`), as for an active one, from its elements in history. */
export function historicArrayDetails(ctx: ApiContext, id: number, elements: readonly StoredJob[]): JobShow {
  const mini = emptyState();
  mini.config = ctx.node.state.config;
  const first = elements[0]!.job;
  const array = makeArray({ ...first, id, spec: decodedSpec(first.spec) });
  if (array === null) throw new ApiFailure('internal', `job array ${id} from history has no array name`);
  mini.arrays.set(id, array);
  for (const e of elements) mini.jobs.set(e.job.id, e.job);
  const d = arrayDetails(mini, id);
  if (d === null) throw new ApiFailure('internal', `job array ${id} from history has no details`);
  const last = elements.reduce((a, b) => (b.cleanIndex > a.cleanIndex ? b : a));
  return { ...d, history: { cleanedAtIndex: last.cleanIndex, cleanedTimeMs: last.cleanTimeMs } };
}

/** A cleaned job's details, read as `jobs show` reads an active one (against the current profiles). */
export function historicDetails(ctx: ApiContext, s: StoredJob): JobShow {
  const mini = emptyState();
  mini.config = ctx.node.state.config;
  mini.jobs.set(s.job.id, s.job);
  const d = jobDetails(mini, s.job.id);
  if (d === null) throw new ApiFailure('internal', `job ${s.job.id} from history has no details`);
  return { ...d, history: { cleanedAtIndex: s.cleanIndex, cleanedTimeMs: s.cleanTimeMs } };
}

/**
 * The history row `after` names when it is a cursor into history (a job that left the state and
 * is in this controller's store); null when it names a job of the state's pages.
 */
export async function historyCursor(ctx: ApiContext, after: number): Promise<StoredJob | null> {
  const state = ctx.node.state;
  if (state.jobs.has(after) || state.arrays.has(after)) return null;
  return (await ctx.node.accounting?.get(after)) ?? null;
}

/**
 * `jobs list --all` / `--since`: the rows from history after the active ones (newest end first,
 * or newest id first for --user/--queue), from the row after `cursor` when given; `more` when the
 * store has rows beyond these (the next page's `--after` is the last row's id).
 */
export async function historyRows(
  ctx: ApiContext,
  a: OpArgs<'jobs.list'>,
  limit: number,
  visible: (j: Job) => { hidden: boolean } | null,
  cursor: StoredJob | null = null,
): Promise<{ rows: JobSummary[]; more: boolean }> {
  const store = storeOf(ctx);
  const out: JobSummary[] = [];
  let more = false;
  // Reads more than `limit` when rows are filtered by visibility or --app, a bounded number of times.
  for (let want = limit + 1, round = 0; round < 4; round++, want *= 4) {
    out.length = 0;
    more = false;
    const found = await store.list({
      limit: want,
      ...(a.sinceMs !== undefined ? { sinceMs: a.sinceMs } : {}),
      ...(a.user !== undefined ? { user: a.user } : {}),
      ...(a.queue !== undefined ? { queue: a.queue } : {}),
      ...(a.state !== undefined ? { state: a.state } : {}),
      ...(cursor !== null ? { after: { id: cursor.job.id, endMs: cursor.job.endTimeMs } } : {}),
    });
    for (const s of found) {
      const v = visible(s.job);
      if (v === null) continue;
      if (a.app !== undefined && s.job.profile !== a.app && (v.hidden || s.job.record?.profile !== a.app)) continue;
      if (out.length >= limit) {
        more = true;
        break;
      }
      out.push({ ...jobSummary(s.job, null, v.hidden), fromHistory: true });
    }
    if (more || found.length < want) break;
    // Every row read was taken or filtered out and the store has more: read further next round.
    more = out.length >= limit;
    if (more) break;
  }
  return { rows: out, more };
}

/** `jobs.history`: the job's events, from the state or from this controller's store. */
export async function jobHistory(
  ctx: ApiContext,
  req: RequestOf<'jobs.history'>,
  mayView: (config: ClusterConfig, job: Job) => boolean,
): Promise<JobHistory> {
  const config = await readConfig(ctx, req);
  const id = req.args.id;
  const array = ctx.node.state.arrays.get(id);
  if (array !== undefined) {
    const elements = elementsOf(ctx.node.state, array);
    if (elements.length === 0 || !mayView(config, elements[0]!))
      throw new ApiFailure('not-found', `job ${id} does not exist`);
    return { jobId: id, source: 'state', user: array.user, events: arrayEvents(elements, []) };
  }
  const stored = ctx.node.state.jobs.has(id) ? null : await cleanedArray(ctx, id);
  if (stored !== null) {
    if (!mayView(config, stored[0]!.job)) throw new ApiFailure('not-found', `job ${id} does not exist`);
    const events = arrayEvents(
      stored.map((s) => s.job),
      stored,
    );
    return { jobId: id, source: 'history', user: stored[0]!.job.user, events };
  }
  return jobHistoryOf(ctx, config, id, mayView);
}

/**
 * A job array's events: submitted once, then each element's own (dispatch, start, end: named by
 * its index), and each element's leaving the state when it came from history; in time order.
 */
function arrayEvents(elements: readonly Job[], stored: readonly StoredJob[]): JobEvent[] {
  const first = elements[0]!;
  const head = eventsOf(first)[0]!; // submitted
  const rows: JobEvent[] = [];
  for (const j of elements) {
    const tag = `[${arrayIndexOf(j.id)}] `;
    for (const e of eventsOf(j).slice(1)) rows.push({ ...e, detail: tag + e.detail });
  }
  for (const s of stored)
    rows.push({
      timeMs: s.cleanTimeMs,
      event: 'cleaned',
      detail: `[${arrayIndexOf(s.job.id)}] left the controllers' state (log index ${s.cleanIndex}); kept in accounting`,
    });
  // Stable: rows without a time keep their place after the timed row before them.
  const timed = rows.filter((r) => r.timeMs !== null).sort((a, b) => a.timeMs! - b.timeMs!);
  const untimed = rows.filter((r) => r.timeMs === null);
  return [head, ...timed, ...untimed];
}

async function jobHistoryOf(
  ctx: ApiContext,
  config: ClusterConfig,
  id: number,
  mayView: (config: ClusterConfig, job: Job) => boolean,
): Promise<JobHistory> {
  const active = ctx.node.state.jobs.get(id);
  const stored = active === undefined ? await cleanedJob(ctx, id) : null;
  const job = active ?? stored?.job;
  if (job === undefined || !mayView(config, job)) throw new ApiFailure('not-found', `job ${id} does not exist`);
  const events = eventsOf(job);
  if (stored !== null && stored !== undefined)
    events.push({
      timeMs: stored.cleanTimeMs,
      event: 'cleaned',
      detail: `left the controllers' state (log index ${stored.cleanIndex}); kept in accounting`,
    });
  return { jobId: id, source: active !== undefined ? 'state' : 'history', user: job.user, events };
}

/** How `jobs history` names a job's own events (hold, suspend, modify: the job's `events`). */
const EVENT_NAMES: Readonly<Record<string, string>> = {
  hold: 'held',
  release: 'released',
  suspend: 'suspended',
  resume: 'resumed',
  suspended: 'stopped by the worker',
  resumed: 'continued by the worker',
  modify: 'modified',
};

/**
 * A job's events as its record holds them: submit, earlier runs (counted), dispatch, start, end,
 * and, in time order among them, hold, release, suspend, resume and modify.
 */
export function eventsOf(j: Job): JobEvent[] {
  const own: JobEvent[] = j.events.map((e) => ({
    timeMs: e.timeMs,
    event: EVENT_NAMES[e.action] ?? e.action,
    detail: [e.user !== null ? `by ${e.user}` : null, e.detail].filter((x) => x !== null).join(': '),
  }));
  const out: JobEvent[] = [];
  let next = 0;
  for (const row of lifecycleOf(j)) {
    // A row without a time stays after the row it follows.
    if (row.timeMs !== null) while (next < own.length && own[next]!.timeMs! < row.timeMs) out.push(own[next++]!);
    out.push(row);
  }
  while (next < own.length) out.push(own[next++]!);
  return out;
}

function lifecycleOf(j: Job): JobEvent[] {
  const ev: JobEvent[] = [];
  ev.push({
    timeMs: j.submitTimeMs,
    event: 'submitted',
    detail: `by ${j.user} to queue ${j.queue}${j.profile !== null ? `, profile ${j.profile}` : ''}`,
  });
  if (j.requeueCount > 0)
    ev.push({
      timeMs: null,
      event: 'requeued',
      detail: `${j.requeueCount} time(s) before the run below (earlier runs' times are not kept)`,
    });
  if (j.lastDecline !== null) ev.push({ timeMs: null, event: 'pended', detail: j.lastDecline });
  if (j.state === 'PEND')
    ev.push({
      timeMs: null,
      event: 'pending',
      detail: j.heldBy !== null ? `held by user ${j.heldBy}` : 'waiting to be dispatched',
    });
  if (j.record !== null && j.dispatchTimeMs !== 0) {
    const hosts = j.record.hosts.map((h) => `${h.host}:${h.tasks}`).join(',');
    ev.push({ timeMs: j.dispatchTimeMs, event: 'dispatched', detail: `run ${j.runNumber} to ${hosts}` });
  }
  if (j.started) ev.push({ timeMs: j.startTimeMs, event: 'started', detail: `pid ${j.pid}` });
  if (isRunning(j) && j.killRequestedBy !== null)
    ev.push({ timeMs: null, event: 'kill requested', detail: `by ${j.killRequestedBy}` });
  if (j.state === 'DONE' || j.state === 'EXIT') {
    const how = j.signal !== null ? `signal ${j.signal}` : `exit code ${j.exitCode}`;
    ev.push({
      timeMs: j.endTimeMs,
      event: j.state === 'DONE' ? 'done' : 'exited',
      detail: `${how}${j.reason !== null ? `: ${j.reason}` : ''}`,
    });
  }
  return ev;
}

/** `accounting.report`: needs job:view (it sums every user's jobs). */
export async function report(
  ctx: ApiContext,
  user: string,
  req: RequestOf<'accounting.report'>,
): Promise<AccountingReport> {
  const config = requireConfig(ctx);
  check(config, user, 'job:view');
  const { sinceMs, untilMs } = req.args;
  if (untilMs <= sinceMs)
    throw new ApiFailure(
      'bad-request',
      `until (${new Date(untilMs).toISOString()}) is not after since (${new Date(sinceMs).toISOString()})`,
    );
  const by = req.args.by ?? null;
  const rows = await accountingReport(storeOf(ctx), sinceMs, untilMs, by);
  return { sinceMs, untilMs, by, rows };
}
