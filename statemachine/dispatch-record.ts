// The frozen dispatch record (spec/application-profile-brief.md, "Dispatch record"): what a job
// was scheduled and started with, built from the live merge at dispatch and never re-merged until
// the job is requeued or restarted. It holds both sides: scheduling (effective resreq with each
// term's origin, task count, hosts) and execution (mode, launch type, env, outer and inner
// pre/post-exec, limits), plus the content hash of the profile it was built from, so that "profile
// changed since dispatch" is a hash comparison and a new leader rebuilds reservations identically.

import type {
  EffectiveResReq,
  EffectiveValues,
  EnvVar,
  ExecMode,
  LaunchType,
  Limits,
  WithOrigin,
} from '../model/profile-types.js';

/** A placement: how many of the job's tasks run on one host. */
export interface HostTasks {
  readonly host: string;
  readonly tasks: number;
}

export type EffectiveLimits = { readonly [K in keyof Limits]?: WithOrigin<number> };

export interface DispatchRecord {
  /** The resolved profile name; null for a record written before profiles existed. */
  readonly profile: string | null;
  /** Hex content hash of the profile the record was built from; null with no profile. */
  readonly profileHash: string | null;
  readonly mode: ExecMode;
  readonly launchType: LaunchType;
  readonly resreq: EffectiveResReq;
  readonly tasks: number;
  readonly hosts: readonly HostTasks[];
  readonly env: readonly WithOrigin<EnvVar>[];
  readonly limits: EffectiveLimits;
  readonly profilePreExec: string | null;
  readonly profilePostExec: string | null;
  readonly jobPreExec: string | null;
  readonly jobPostExec: string | null;
}

/** The empty effective resource requirement (nothing selected, nothing reserved). */
export const EMPTY_EFFECTIVE_RESREQ: EffectiveResReq = Object.freeze({
  select: [],
  rusage: [],
  span: null,
  same: null,
  order: null,
});

/** Freezes the live merge's values and a placement into a record (the scheduler calls this). */
export function buildDispatchRecord(
  effective: EffectiveValues,
  profileHash: string | null,
  hosts: readonly HostTasks[],
): DispatchRecord {
  return {
    profile: effective.profile,
    profileHash,
    mode: effective.mode,
    launchType: effective.launchType,
    resreq: effective.resreq,
    tasks: effective.tasks,
    hosts: hosts.map((h) => ({ host: h.host, tasks: h.tasks })),
    env: effective.env,
    limits: effective.limits,
    profilePreExec: effective.profilePreExec,
    profilePostExec: effective.profilePostExec,
    jobPreExec: effective.jobPreExec,
    jobPostExec: effective.jobPostExec,
  };
}

/** Total tasks of a placement. */
export function placementTasks(hosts: readonly HostTasks[]): number {
  let n = 0;
  for (const h of hosts) n += h.tasks;
  return n;
}
