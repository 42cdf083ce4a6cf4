// A cleaned job's summary: what lists and reports read without decoding the whole record (the
// value of its `e!` key), and the sums a report adds up (per user, profile and queue).

import type { Job, JobState } from '../../statemachine/state.js';

export interface JobSummaryEntry {
  readonly id: number;
  readonly user: string;
  /** The profile as recorded; null for a record from before profiles. */
  readonly profile: string | null;
  readonly queue: string;
  readonly state: JobState;
  /** Tasks of the last run (its slots); 0 when it never ran. */
  readonly tasks: number;
  /** Wall time of the last run: end − start, 0 when it never started. */
  readonly wallMs: number;
  readonly submitMs: number;
  readonly endMs: number;
}

export function summaryOf(job: Job): JobSummaryEntry {
  const ran = job.started && job.startTimeMs > 0 && job.endTimeMs >= job.startTimeMs;
  const tasks = job.record === null ? 0 : job.record.hosts.reduce((n, h) => n + h.tasks, 0) || job.record.tasks;
  return {
    id: job.id,
    user: job.user,
    profile: job.profile,
    queue: job.queue,
    state: job.state,
    tasks,
    wallMs: ran ? job.endTimeMs - job.startTimeMs : 0,
    submitMs: job.submitTimeMs,
    endMs: job.endTimeMs,
  };
}

/** The `e!` value: the summary without what its key holds (id, end time). */
export function encodeSummary(s: JobSummaryEntry): string {
  return [s.user, s.profile ?? '', s.queue, s.state, s.tasks, s.wallMs, s.submitMs].join('\t');
}

export function decodeSummary(id: number, endMs: number, v: string): JobSummaryEntry {
  const [user = '', profile = '', queue = '', state = 'EXIT', tasks = '0', wall = '0', submit = '0'] = v.split('\t');
  return {
    id,
    user,
    profile: profile === '' ? null : profile,
    queue,
    state: state as JobState,
    tasks: Number(tasks),
    wallMs: Number(wall),
    submitMs: Number(submit),
    endMs,
  };
}

/** What a report adds up for a group of jobs. */
export interface Sums {
  jobs: number;
  done: number;
  exit: number;
  /** Σ tasks × wall time. */
  cpuMs: number;
  wallMs: number;
}

export const emptySums = (): Sums => ({ jobs: 0, done: 0, exit: 0, cpuMs: 0, wallMs: 0 });

export function addJob(s: Sums, e: JobSummaryEntry): void {
  s.jobs++;
  if (e.state === 'DONE') s.done++;
  else s.exit++;
  s.cpuMs += e.tasks * e.wallMs;
  s.wallMs += e.wallMs;
}

export function addSums(s: Sums, t: Sums): void {
  s.jobs += t.jobs;
  s.done += t.done;
  s.exit += t.exit;
  s.cpuMs += t.cpuMs;
  s.wallMs += t.wallMs;
}

/** A report bucket's group: user, profile and queue (none of them holds a `/`). */
export const groupOf = (e: JobSummaryEntry): string => `${e.user}/${e.profile ?? '(none)'}/${e.queue}`;
export function splitGroup(g: string): { user: string; app: string; queue: string } {
  const [user = '', app = '', queue = ''] = g.split('/');
  return { user, app, queue };
}
