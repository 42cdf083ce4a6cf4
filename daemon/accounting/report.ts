// `xceadmin accounting report`: job counts, CPU·hours and wall·hours of the jobs that ended in
// [since, until), per user, profile (app) or queue, or in total. Whole hours come from the hour
// buckets, whole minutes at the two ends from the minute buckets, and only the partial minutes at
// the very ends from single job summaries: the time a report takes does not grow with the number
// of jobs in the range.

import type { AccountingStore } from './store.js';
import { addJob, addSums, emptySums, groupOf, splitGroup, type Sums } from './summary.js';
import { BUCKET_MS } from './keys.js';

export type ReportBy = 'user' | 'app' | 'queue';

export interface ReportRow {
  /** The user, profile or queue; `(all)` for a report without --by. */
  readonly key: string;
  readonly jobs: number;
  readonly done: number;
  readonly exit: number;
  readonly cpuHours: number;
  readonly wallHours: number;
}

interface Segment {
  readonly kind: 'h' | 'm' | 'jobs';
  readonly fromMs: number;
  readonly toMs: number;
}

const floorTo = (t: number, unit: number): number => Math.floor(t / unit) * unit;
const ceilTo = (t: number, unit: number): number => Math.ceil(t / unit) * unit;

/** [since, until) cut into whole hours, whole minutes and the partial minutes at the ends. */
export function segments(sinceMs: number, untilMs: number): Segment[] {
  if (untilMs <= sinceMs) return [];
  const M = BUCKET_MS.m;
  const H = BUCKET_MS.h;
  const m0 = ceilTo(sinceMs, M);
  const m1 = floorTo(untilMs, M);
  if (m0 >= m1) return [{ kind: 'jobs', fromMs: sinceMs, toMs: untilMs }];
  const out: Segment[] = [];
  if (sinceMs < m0) out.push({ kind: 'jobs', fromMs: sinceMs, toMs: m0 });
  const h0 = ceilTo(m0, H);
  const h1 = floorTo(m1, H);
  if (h0 >= h1) out.push({ kind: 'm', fromMs: m0, toMs: m1 });
  else {
    if (m0 < h0) out.push({ kind: 'm', fromMs: m0, toMs: h0 });
    out.push({ kind: 'h', fromMs: h0, toMs: h1 });
    if (h1 < m1) out.push({ kind: 'm', fromMs: h1, toMs: m1 });
  }
  if (m1 < untilMs) out.push({ kind: 'jobs', fromMs: m1, toMs: untilMs });
  return out;
}

const HOUR_MS = 3_600_000;

export async function accountingReport(
  store: AccountingStore,
  sinceMs: number,
  untilMs: number,
  by: ReportBy | null,
): Promise<ReportRow[]> {
  const byGroup = new Map<string, Sums>();
  const sumsOf = (g: string): Sums => {
    let s = byGroup.get(g);
    if (s === undefined) byGroup.set(g, (s = emptySums()));
    return s;
  };
  for (const seg of segments(sinceMs, untilMs)) {
    if (seg.kind === 'jobs') {
      for await (const e of store.summaries(seg.fromMs, seg.toMs)) addJob(sumsOf(groupOf(e)), e);
    } else {
      for await (const [g, s] of store.buckets(seg.kind, seg.fromMs, seg.toMs)) addSums(sumsOf(g), s);
    }
  }
  const rows = new Map<string, Sums>();
  for (const [g, s] of byGroup) {
    const parts = splitGroup(g);
    const key = by === null ? '(all)' : parts[by];
    let r = rows.get(key);
    if (r === undefined) rows.set(key, (r = emptySums()));
    addSums(r, s);
  }
  return [...rows.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, s]) => ({
      key,
      jobs: s.jobs,
      done: s.done,
      exit: s.exit,
      cpuHours: Math.round((s.cpuMs / HOUR_MS) * 1000) / 1000,
      wallHours: Math.round((s.wallMs / HOUR_MS) * 1000) / 1000,
    }));
}
