// Response shaping for the client API: a job as `jobs.list` shows it, a dry run's effective values,
// a profile as `apps.list` and `apps.show` show it, limits in the units users write, job counts per
// state. Pure functions of what they are given; who may see what is decided by the operations.

import type { AppDetail, AppSummary, DryRunResult, JobSummary } from '../../api/responses.js';
import type { Admission } from '../../statemachine/admission.js';
import { profileHiddenNote, resreqTerms } from '../../statemachine/queries.js';
import { foldedState } from '../../statemachine/array-queries.js';
import type { ControllerState, Job, JobArray } from '../../statemachine/state.js';
import { countByState } from '../../statemachine/arrays.js';
import { formatJobId } from '../../model/job-id.js';
import type { ClusterConfig } from '../../model/config-types.js';
import { profileHash, profileLabel } from '../../model/profile-hash.js';
import type { Profile } from '../../model/profile-types.js';
import { formatDuration, formatSize } from '../../model/units.js';

/** A job as `jobs list` shows it; `hidden`: the viewer may not see its profile (no app:view): the recorded name, no pend reason. */
export function jobSummary(j: Job, pend: string | null, hidden: boolean): JobSummary {
  return {
    id: j.id,
    state: j.state,
    user: j.user,
    queue: j.queue,
    app: hidden ? j.profile : (j.record?.profile ?? j.profile),
    name: j.spec.jobName,
    command: j.spec.command.join(' '),
    hosts: j.record?.hosts.map((h) => `${h.host}:${h.tasks}`).join(',') ?? '',
    submitTimeMs: j.submitTimeMs,
    pendReason: hidden && pend !== null && j.profile !== null ? `(${profileHiddenNote(j.profile)})` : pend,
    exitCode: j.state === 'DONE' || j.state === 'EXIT' ? j.exitCode : null,
    reason: j.reason,
    label: formatJobId(j.id),
  };
}

/** A job array folded into one row of `jobs list`: its state the most active of its elements', with counts by state. */
export function arraySummary(a: JobArray, elements: readonly Job[]): JobSummary {
  const counts = countByState(elements);
  return {
    id: a.id,
    state: foldedState(counts),
    user: a.user,
    queue: a.queue,
    app: a.profile,
    name: a.name,
    command: a.spec.command.join(' '),
    hosts: '',
    submitTimeMs: a.submitTimeMs,
    pendReason: null,
    exitCode: null,
    reason: null,
    label: String(a.id),
    array: { size: a.indices.length, limit: a.limit, counts },
  };
}

/** What an admitted submit would run with: the dry run's answer. */
export function dryRunView(a: Extract<Admission, { ok: true }>): DryRunResult {
  const e = a.effective;
  return {
    dryRun: true,
    profile: e.profile,
    profileLabel: a.hash === null ? null : profileLabel(e.profile, a.hash),
    recordedAs: a.submit.profile,
    mode: e.mode,
    launchType: e.launchType,
    tasks: e.tasks,
    resreq: resreqTerms(e.resreq),
    env: e.env.map((v) => ({ name: v.value.name, value: v.value.value, origin: v.origin })),
    limits: Object.entries(e.limits).map(([k, v]) => ({
      name: limitName(k),
      value: formatLimit(k, v!.value),
      origin: v!.origin,
    })),
    profilePreExec: e.profilePreExec,
    profilePostExec: e.profilePostExec,
    jobPreExec: e.jobPreExec,
    jobPostExec: e.jobPostExec,
    queue: a.submit.queue,
  };
}

/** What `apps list` and `apps show` both tell of a profile. */
function profileFields(p: Profile, config: ClusterConfig): Omit<AppSummary, 'usable'> {
  return {
    name: p.name,
    label: profileLabel(p.name, profileHash(p)),
    description: p.description,
    aliases: p.aliases,
    mode: p.mode,
    launchType: p.launchType ?? 'serial',
    isDefault: config.cluster.defaultApplication === p.name,
  };
}

/** A profile as `apps list` shows it; `usable`: the viewer holds app:use on it. */
export function appSummary(p: Profile, config: ClusterConfig, usable: boolean): AppSummary {
  return { ...profileFields(p, config), usable };
}

/** A profile's values as `apps show` shows them; `recordedAs`: the name asked for. */
export function appDetail(p: Profile, recordedAs: string, config: ClusterConfig, usable: boolean): AppDetail {
  return {
    ...profileFields(p, config),
    recordedAs,
    hash: profileHash(p),
    resreq:
      p.resreq === null
        ? []
        : resreqTerms({
            select: p.resreq.select.map((value) => ({ value, origin: 'profile' as const })),
            rusage: p.resreq.rusage.map((value) => ({ value, origin: 'profile' as const })),
            span: p.resreq.span === null ? null : { value: p.resreq.span, origin: 'profile' },
            same: p.resreq.same === null ? null : { value: p.resreq.same, origin: 'profile' },
            order: p.resreq.order === null ? null : { value: p.resreq.order, origin: 'profile' },
          }).map((t) => t.text),
    tasks: p.tasks,
    limits: Object.entries(p.limits).map(([k, v]) => ({ name: limitName(k), max: formatLimit(k, v as number) })),
    env: p.env,
    preExec: p.preExec,
    postExec: p.postExec,
    jobPrePostExec: p.jobPrePostExec,
    usable,
  };
}

/** `runtime_s` → `runtime`: the names users write in `--limit` and profiles. */
export function limitName(key: string): string {
  return key.replace(/_(s|bytes)$/, '');
}

export function formatLimit(key: string, value: number): string {
  return key === 'memory_bytes' ? formatSize(value) : key === 'tasks' ? String(value) : formatDuration(value);
}

/** Jobs per state: PEND, RUN, DONE, EXIT. */
export function countJobs(state: ControllerState): Record<string, number> {
  const out: Record<string, number> = { PEND: 0, RUN: 0, DONE: 0, EXIT: 0 };
  for (const j of state.jobs.values()) out[j.state] = (out[j.state] ?? 0) + 1;
  return out;
}
