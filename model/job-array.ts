// A job array's name as `-J` gives it (LSF's syntax): `sweep[1-1000]`, `sweep[1-1000:10]` (a step),
// `sweep[1,5,9-12]` (a list of indices and ranges) and `%N` after the bracket (`sweep[1-1000]%50`):
// at most N elements run at once. Pure; admission (statemachine/admission.ts) refuses a malformed
// one, and one larger than `array_size_max`, naming what is wrong.

import { ARRAY_INDEX_MAX } from './job-id.js';

export interface ArraySpec {
  /** The name without the index part (`sweep`): what `-w "done(sweep)"` and `jobs list` show. */
  readonly name: string;
  /** The indices, ascending, each once. */
  readonly indices: readonly number[];
  /** `%N`: most elements running at once; 0: no limit. */
  readonly limit: number;
}

export type ArrayParse =
  | { readonly kind: 'plain' }
  | { readonly kind: 'array'; readonly spec: ArraySpec }
  | { readonly kind: 'error'; readonly message: string };

const ARRAY_RE = /^([^[\]%]*)\[([^\]]*)\](?:%(.*))?$/;
const INT_RE = /^[0-9]+$/;

/**
 * Parses a job name. `sizeMax` bounds the element count (the configuration's `array_size_max`),
 * counted before the indices are listed, so that `[1-9999999]` costs nothing.
 */
export function parseArrayName(jobName: string | null, sizeMax: number): ArrayParse {
  if (jobName === null || (!jobName.includes('[') && !jobName.includes(']'))) return { kind: 'plain' };
  const bad = (why: string): ArrayParse => ({
    kind: 'error',
    message: `job array ${JSON.stringify(jobName)}: ${why} (expected NAME[1-1000], NAME[1-1000:10], NAME[1,5,9-12], optionally followed by %N)`,
  });
  const m = ARRAY_RE.exec(jobName);
  if (m === null) return bad('the index part must be one [...] at the end of the name');
  const name = m[1]!;
  const body = m[2]!;
  if (name === '') return bad('the array has no name before [');
  let limit = 0;
  if (m[3] !== undefined) {
    if (!INT_RE.test(m[3]) || Number(m[3]) < 1) return bad(`%${m[3]} is not a positive whole number of elements`);
    limit = Number(m[3]);
  }
  if (body.trim() === '') return bad('the index list is empty');
  const ranges: { from: number; to: number; step: number; text: string }[] = [];
  let count = 0;
  for (const part of body.split(',')) {
    const p = part.trim();
    const r = /^([0-9]+)(?:-([0-9]+)(?::([0-9]+))?)?$/.exec(p);
    if (r === null) return bad(`"${p}" is not an index, a range FROM-TO or FROM-TO:STEP`);
    const from = Number(r[1]);
    const to = r[2] === undefined ? from : Number(r[2]);
    const step = r[3] === undefined ? 1 : Number(r[3]);
    if (from < 1) return bad(`index ${from} is below 1 (indices start at 1)`);
    if (to > ARRAY_INDEX_MAX) return bad(`index ${to} is above the largest index, ${ARRAY_INDEX_MAX}`);
    if (to < from) return bad(`range ${p} ends before it starts`);
    if (step < 1) return bad(`step ${step} in ${p} must be at least 1`);
    ranges.push({ from, to, step, text: p });
    count += Math.floor((to - from) / step) + 1;
  }
  if (count > sizeMax)
    return bad(`its ${count} elements are more than the cluster's array_size_max (${sizeMax}, xce.yaml)`);
  const set = new Set<number>();
  for (const r of ranges) for (let i = r.from; i <= r.to; i += r.step) set.add(i);
  const indices = [...set].sort((a, b) => a - b);
  return { kind: 'array', spec: { name, indices, limit } };
}
