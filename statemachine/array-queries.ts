// Job arrays as the queries show them: `jobs show ID` of a whole array, and `jobs list` with each
// array folded into one row (or, with `--expand`, each element a row of its own). Pure.

import { arrayIdOf, isElementId } from '../model/job-id.js';
import { countByState, elementsOf } from './arrays.js';
import { jobDetails, pageJobs, type JobDetails } from './queries.js';
import type { ControllerState, Job, JobArray, JobState } from './state.js';

/**
 * `jobs show ID` of a whole array: its first element's details under the array's id, its state the
 * most active of its elements' (RUN, then PEND, then EXIT, then DONE), with the counts by state.
 */
export function arrayDetails(state: ControllerState, arrayId: number): JobDetails | null {
  const a = state.arrays.get(arrayId);
  if (a === undefined) return null;
  const elements = elementsOf(state, a);
  const first = elements[0];
  if (first === undefined) return null;
  const d = jobDetails(state, first.id)!;
  const counts = countByState(elements);
  return {
    ...d,
    id: a.id,
    label: String(a.id),
    state: foldedState(counts),
    pendReason: null,
    record: null,
    runNumber: 0,
    dispatchTimeMs: null,
    startTimeMs: null,
    endTimeMs: null,
    exitCode: null,
    signal: null,
    reason: null,
    killRequestedBy: null,
    array: { id: a.id, name: a.name, index: null, size: a.indices.length, limit: a.limit, counts },
  };
}

/** A folded array's state: RUN if any element runs, else PEND if any pends, else EXIT if any exited, else DONE. */
export function foldedState(c: Record<JobState, number>): JobState {
  return c.RUN > 0 ? 'RUN' : c.PEND > 0 ? 'PEND' : c.EXIT > 0 ? 'EXIT' : 'DONE';
}

/** One row of a folded job list: a plain job, an array element (expanded), or a whole array (folded). */
export type JobRow =
  | { readonly kind: 'job'; readonly job: Job }
  | { readonly kind: 'array'; readonly array: JobArray; readonly elements: readonly Job[] };

export interface JobRowPage {
  readonly rows: readonly JobRow[];
  /** Rows matching (an array counts once when folded). */
  readonly total: number;
  /** The `after` cursor of the next page (a job's or an array's id); null when none is left. */
  readonly next: number | null;
}

/**
 * pageJobs with job arrays folded: unless `expand`, an array is one row (its elements, of which at
 * least one matches) where its elements are; expanded, each element is a row of its own. The cursor
 * is the job id (an array's id for its elements), newest first.
 */
export function pageJobRows(
  state: ControllerState,
  match: (job: Job) => boolean,
  limit: number,
  after: number | null,
  expand: boolean,
): JobRowPage {
  if (state.arrays.size === 0 || expand) {
    const p = pageJobs(state, match, limit, after === null ? null : after, true);
    return { rows: p.jobs.map((job) => ({ kind: 'job', job })), total: p.total, next: p.next };
  }
  const rows: JobRow[] = [];
  let total = 0;
  let more = false;
  const ids = [...state.jobs.keys()];
  for (let i = ids.length - 1; i >= 0; i--) {
    const id = ids[i]!;
    if (isElementId(id)) {
      const arrayId = arrayIdOf(id);
      const array = state.arrays.get(arrayId);
      // The array's elements sit together: take them all at the last one (the first met going backwards).
      let first = i;
      while (first > 0 && isElementId(ids[first - 1]!) && arrayIdOf(ids[first - 1]!) === arrayId) first--;
      const elements: Job[] = [];
      let matched = false;
      for (let k = first; k <= i; k++) {
        const j = state.jobs.get(ids[k]!)!;
        elements.push(j);
        if (!matched && match(j)) matched = true;
      }
      i = first;
      if (!matched || array === undefined) continue;
      total++;
      if (after !== null && arrayId >= after) continue;
      if (rows.length < limit) rows.push({ kind: 'array', array, elements });
      else more = true;
      continue;
    }
    const j = state.jobs.get(id)!;
    if (!match(j)) continue;
    total++;
    if (after !== null && j.id >= after) continue;
    if (rows.length < limit) rows.push({ kind: 'job', job: j });
    else more = true;
  }
  const last = rows[rows.length - 1];
  const next = !more || last === undefined ? null : last.kind === 'job' ? last.job.id : last.array.id;
  return { rows, total, next };
}
