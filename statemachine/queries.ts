// Job details (pure reads of the state): the profile as recorded and as resolved
// (`openfoam (recorded as openfoam-old)`), its short hash label (`openfoam@3f2a9c`), the effective
// mode, the effective resource requirement with each term's origin, the frozen values of a
// dispatched job and whether its profile changed since dispatch, and the pend reason. And a page
// of a job list (`pageJobs`: newest first, after a cursor, with the total).

import type { DispatchRecord } from './dispatch-record.js';
import { hashOf, jobLiveMerge, pendReason } from './jobs.js';
import { profileLabel } from '../model/profile-hash.js';
import type { EffectiveResReq, EnvVar, ExecMode, LaunchType, Origin, WithOrigin } from '../model/profile-types.js';
import { describeResolution, resolveProfile } from '../model/profiles.js';
import {
  formatOrder,
  formatResReq,
  formatRusageItem,
  formatSame,
  formatSelectExpr,
  formatSpan,
} from '../model/resreq.js';
import type { ControllerState, Job, JobEvent, JobState } from './state.js';
import { arrayIdOf, arrayIndexOf, formatJobId, isElementId } from '../model/job-id.js';
import { countByState, elementsOf } from './arrays.js';

export interface ResReqTerm {
  readonly section: 'select' | 'rusage' | 'span' | 'same' | 'order' | 'compound';
  /** As an admin or user writes it, e.g. `select[ib]`, `rusage[license_foam=1]`. */
  readonly text: string;
  readonly origin: Origin;
}

export interface ProfileView {
  /** The name recorded on the job; null for a record from before profiles. */
  readonly recorded: string | null;
  /** The profile it resolves to now (an alias's target); null when it is not defined. */
  readonly resolved: string | null;
  /** `openfoam`, `openfoam (recorded as openfoam-old)`, `openfoam-old (not defined)` or `(none)`. */
  readonly display: string;
  /** `openfoam@3f2a9c` for the current profile; null when not defined or none. */
  readonly label: string | null;
}

export interface JobDetails {
  readonly id: number;
  readonly state: JobState;
  readonly user: string;
  readonly queue: string;
  readonly name: string | null;
  readonly command: readonly string[];
  readonly profile: ProfileView;
  /** The mode the job runs (running/finished: from its record) or would run (pending: live merge); null when unknown. */
  readonly mode: ExecMode | null;
  readonly launchType: LaunchType | null;
  readonly tasks: number | null;
  /** The effective resource requirement, each term with where it came from. */
  readonly resreq: readonly ResReqTerm[];
  readonly env: readonly WithOrigin<EnvVar>[];
  /** The frozen record of the current (or last) run; null while pending. */
  readonly record: DispatchRecordView | null;
  /** `openfoam@3f2a9c` as frozen on the record. */
  readonly recordLabel: string | null;
  /** true when the current profile's hash differs from the record's (or the profile is gone); null without a record. */
  readonly profileChangedSinceDispatch: boolean | null;
  readonly pendReason: string | null;
  readonly runNumber: number;
  readonly requeueCount: number;
  readonly submitTimeMs: number;
  readonly dispatchTimeMs: number | null;
  readonly startTimeMs: number | null;
  readonly endTimeMs: number | null;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly reason: string | null;
  readonly killRequestedBy: string | null;
  /** The user who held the pending job (`jobs hold`); null when not held. */
  readonly heldBy: string | null;
  /** Hold, release, suspend, resume (asked, and the worker's report) and modify, oldest first. */
  readonly events: readonly JobEvent[];
  /** The modifications (`jobs modify`): who, when, what changed; oldest first. */
  readonly modifications: readonly {
    readonly user: string | null;
    readonly timeMs: number;
    readonly changes: string;
  }[];
  /**
   * null when every value is shown. Otherwise `hidden: no app:view on profile X`: the viewer may
   * see the job but not its profile (hideProfileValues), and the profile's values are left out.
   */
  readonly profileValuesHidden: string | null;
  /** How users write the id: `42`, or `42[7]` for an array element. */
  readonly label?: string;
  /** `-w`: as written, with names resolved to ids, and what happens when it can never be met. */
  readonly dependency?: { readonly text: string; readonly resolved: string; readonly onNever: 'pend' | 'kill' } | null;
  /** The job array the job is an element of, or (`jobs show ID` of an array) the array itself, with its elements' counts. */
  readonly array?: {
    readonly id: number;
    readonly name: string;
    /** The element's index; null for the whole array. */
    readonly index: number | null;
    readonly size: number;
    /** `%N`; 0: none. */
    readonly limit: number;
    readonly counts: Record<JobState, number>;
  } | null;
}

/**
 * A dispatch record as job details carry it. With the profile's values hidden, `profile`,
 * `profileHash`, `launchType` and the profile pre/post-exec are null, and resreq, env and limits
 * hold only the job's own terms.
 */
export type DispatchRecordView = Omit<DispatchRecord, 'launchType'> & { readonly launchType: LaunchType | null };

/** The effective resource requirement as a list of terms with their origin, in the merge's order. */
export function resreqTerms(r: EffectiveResReq): ResReqTerm[] {
  const out: ResReqTerm[] = [];
  for (const t of r.select)
    out.push({ section: 'select', text: `select[${formatSelectExpr(t.value)}]`, origin: t.origin });
  for (const t of r.rusage)
    out.push({ section: 'rusage', text: `rusage[${formatRusageItem(t.value)}]`, origin: t.origin });
  if (r.span !== null) out.push({ section: 'span', text: formatSpan(r.span.value), origin: r.span.origin });
  if (r.same !== null) out.push({ section: 'same', text: formatSame(r.same.value), origin: r.same.origin });
  if (r.order !== null) out.push({ section: 'order', text: formatOrder(r.order.value), origin: r.order.origin });
  if (r.compound !== undefined) out.push({ section: 'compound', text: formatResReq(r.compound), origin: 'job' });
  return out;
}

function profileView(state: ControllerState, job: Job): ProfileView {
  if (job.profile === null) return { recorded: null, resolved: null, display: '(none)', label: null };
  const config = state.config?.cluster ?? null;
  const r = config === null ? null : resolveProfile(config, job.profile);
  if (r === null)
    return { recorded: job.profile, resolved: null, display: `${job.profile} (not defined)`, label: null };
  return {
    recorded: job.profile,
    resolved: r.profile.name,
    display: describeResolution(job.profile, r.profile),
    label: profileLabel(r.profile.name, hashOf(r.profile)),
  };
}

/** The details of one job, or null when there is no such job. */
export function jobDetails(state: ControllerState, id: number): JobDetails | null {
  const job = state.jobs.get(id);
  if (job === undefined) return null;
  const profile = profileView(state, job);
  const rec = job.record;
  let mode: ExecMode | null = null;
  let launchType: LaunchType | null = null;
  let tasks: number | null = null;
  let resreq: ResReqTerm[] = [];
  let env: readonly WithOrigin<EnvVar>[] = [];
  let changed: boolean | null = null;
  let recordLabel: string | null = null;
  if (rec !== null) {
    // Running and finished jobs show only their frozen values.
    mode = rec.mode;
    launchType = rec.launchType;
    tasks = rec.tasks;
    resreq = resreqTerms(rec.resreq);
    env = rec.env;
    if (rec.profile !== null && rec.profileHash !== null) {
      recordLabel = profileLabel(rec.profile, rec.profileHash);
      const config = state.config?.cluster ?? null;
      const now = config === null || job.profile === null ? null : resolveProfile(config, job.profile);
      changed = now === null || hashOf(now.profile) !== rec.profileHash;
    } else changed = false;
  } else if (job.state === 'PEND') {
    const m = jobLiveMerge(state, job);
    if (m.ok) {
      mode = m.effective.mode;
      launchType = m.effective.launchType;
      tasks = m.effective.tasks;
      resreq = resreqTerms(m.effective.resreq);
      env = m.effective.env;
    }
  } else if (job.profile === null) {
    mode = 'direct'; // an old record: no profile, mode direct
  }
  const ran = job.runNumber > 0 && job.dispatchTimeMs !== 0;
  return {
    id: job.id,
    state: job.state,
    user: job.user,
    queue: job.queue,
    name: job.spec.jobName,
    command: job.spec.command,
    profile,
    mode,
    launchType,
    tasks,
    resreq,
    env,
    record: rec,
    recordLabel,
    profileChangedSinceDispatch: changed,
    pendReason: pendReason(state, job),
    runNumber: job.runNumber,
    requeueCount: job.requeueCount,
    submitTimeMs: job.submitTimeMs,
    dispatchTimeMs: ran ? job.dispatchTimeMs : null,
    startTimeMs: job.started ? job.startTimeMs : null,
    endTimeMs: job.state === 'DONE' || job.state === 'EXIT' ? job.endTimeMs : null,
    exitCode: job.state === 'DONE' || job.state === 'EXIT' ? job.exitCode : null,
    signal: job.signal,
    reason: job.reason,
    killRequestedBy: job.killRequestedBy,
    ...controlView(job),
    profileValuesHidden: null,
    ...arrayAndDependency(state, job),
  };
}

/** How users write the job's id, its dependency and its array. */
function arrayAndDependency(state: ControllerState, job: Job): Pick<JobDetails, 'label' | 'dependency' | 'array'> {
  const dep = job.dependency;
  return {
    label: formatJobId(job.id),
    dependency:
      dep === null ? null : { text: dep.text, resolved: dep.resolved, onNever: dep.killWhenNever ? 'kill' : 'pend' },
    array: arrayView(state, job.id),
  };
}

function arrayView(state: ControllerState, id: number): JobDetails['array'] {
  const a = state.arrays.get(isElementId(id) ? arrayIdOf(id) : id);
  if (a === undefined) return null;
  return {
    id: a.id,
    name: a.name,
    index: isElementId(id) ? arrayIndexOf(id) : null,
    size: a.indices.length,
    limit: a.limit,
    counts: countByState(elementsOf(state, a)),
  };
}

/** Hold, suspend and modify as job details show them. */
function controlView(job: Job): Pick<JobDetails, 'heldBy' | 'events' | 'modifications'> {
  const modifications = job.events
    .filter((e) => e.action === 'modify')
    .map((e) => ({ user: e.user, timeMs: e.timeMs, changes: e.detail ?? '' }));
  return { heldBy: job.heldBy, events: job.events, modifications };
}

/** What a viewer without app:view on profile `name` is told in place of its values. */
export function profileHiddenNote(name: string): string {
  return `hidden: no app:view on profile ${name}`;
}

const ownOnly = <T extends { readonly origin: Origin }>(xs: readonly T[]): T[] =>
  xs.filter((x) => x.origin !== 'profile');
const ownOrNull = <T extends { readonly origin: Origin }>(x: T | null): T | null =>
  x === null || x.origin === 'profile' ? null : x;

function ownResReq(r: EffectiveResReq): EffectiveResReq {
  return {
    ...r,
    select: ownOnly(r.select),
    rusage: ownOnly(r.rusage),
    span: ownOrNull(r.span),
    same: ownOrNull(r.same),
    order: ownOrNull(r.order),
  };
}

/**
 * The details of a job as a viewer without app:view on its profile sees them (app:view governs a
 * profile's values wherever they appear): the job itself (id, user, state, queue, name, command,
 * hosts, task count, mode, times, exit) and its own values stay; every value that comes from the
 * profile is left out, not masked, so neither the values nor their names or number show: env,
 * pre/post-exec, resreq terms and limits of origin `profile`, the launch type, the content hash
 * (label, record label, changed-since-dispatch) and an alias's target. The pend reason goes too:
 * the live merge's and the scheduler's reasons quote the profile's terms. The profile is shown by
 * the name the job recorded, the same whether that profile exists or not, so the answer does not
 * tell which hidden profiles exist.
 */
export function hideProfileValues(d: JobDetails): JobDetails {
  const name = d.profile.recorded;
  if (name === null) return d; // no profile: nothing of one to hide
  const note = profileHiddenNote(name);
  const rec = d.record;
  return {
    ...d,
    profile: { recorded: name, resolved: null, display: name, label: null },
    launchType: null,
    resreq: ownOnly(d.resreq),
    env: ownOnly(d.env),
    record:
      rec === null
        ? null
        : {
            ...rec,
            profile: null,
            profileHash: null,
            launchType: null,
            resreq: ownResReq(rec.resreq),
            env: ownOnly(rec.env),
            limits: Object.fromEntries(
              Object.entries(rec.limits).filter(([, v]) => v !== undefined && v.origin !== 'profile'),
            ),
            profilePreExec: null,
            profilePostExec: null,
          },
    recordLabel: null,
    profileChangedSinceDispatch: null,
    pendReason: d.pendReason === null ? null : `(${note})`,
    profileValuesHidden: note,
  };
}

/** One page of jobs, newest first: `jobs` at most `limit` long, `total` every match, `next` the cursor of the next page. */
export interface JobPage {
  readonly jobs: readonly Job[];
  readonly total: number;
  /** The id of the page's last job when more match after it (`--after` of the next page); null when none is left. */
  readonly next: number | null;
}

/**
 * The jobs `match` accepts, newest first (highest id first), after the cursor `after` (ids below
 * it; null: from the newest), at most `limit` of them, with the count of every match (whatever
 * the cursor) and the next page's cursor. One pass over the jobs.
 */
export function pageJobs(
  state: ControllerState,
  match: (job: Job) => boolean,
  limit: number,
  after: number | null,
  /** Compare the cursor with an element's array id (an expanded list's cursor is a job or array id). */
  byArray = false,
): JobPage {
  const jobs: Job[] = [];
  let total = 0;
  let more = false;
  const ids = [...state.jobs.keys()];
  for (let i = ids.length - 1; i >= 0; i--) {
    const j = state.jobs.get(ids[i]!)!;
    if (!match(j)) continue;
    total++;
    const key = byArray && isElementId(j.id) ? arrayIdOf(j.id) : j.id;
    if (after !== null && key >= after) continue;
    if (jobs.length < limit) jobs.push(j);
    else more = true;
  }
  const last = jobs[jobs.length - 1];
  return {
    jobs,
    total,
    next: !more || last === undefined ? null : byArray && isElementId(last.id) ? arrayIdOf(last.id) : last.id,
  };
}
