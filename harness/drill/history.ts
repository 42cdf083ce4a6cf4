// What the drill records while it runs: every client operation of the job-table history (for the
// linearizability check), counts of every operation by result, acknowledged submits, the dispatch
// records seen, and what the workers reported finished (from their logs).

import { ApiError } from '../../cli/client.js';
import type { JobTableOp } from '../linearizability/job-table.js';

/** Error codes after which a write may or may not have taken effect. */
const UNCERTAIN = new Set(['timeout', 'unreachable', 'no-leader', 'not-leader', 'unavailable', 'internal']);

export function outcomeOf(err: unknown): { result: string; uncertain: boolean } {
  if (err instanceof ApiError) return { result: err.code, uncertain: UNCERTAIN.has(err.code) };
  return { result: 'error', uncertain: true };
}

/** Canonical JSON (sorted keys): two equal values give the same bytes whatever their key order. */
export function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .filter((k) => o[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(',')}}`;
}

export class DrillHistory {
  readonly ops: JobTableOp[] = [];
  readonly counts = new Map<string, Map<string, number>>();
  /** marker → job id, for every acknowledged submit. */
  readonly acked = new Map<string, number>();
  /** job id → marker, to catch an id given twice. */
  readonly ackedIds = new Map<number, string>();
  /** Submits whose outcome is unknown (the client gave up). */
  readonly uncertain = new Set<string>();
  /** Submits refused definitely (they must not exist). */
  readonly refused = new Set<string>();
  /** `job:run` → canonical record as first seen, and where. */
  readonly records = new Map<string, { json: string; seenAt_ms: number }>();
  /** `job:run` → what the worker reported at the end of that run. */
  readonly finished = new Map<string, { jobId: number; run: number; kind: string; exitCode: number | null }>();
  /** Jobs the drill asked to kill, requeue or restart (their final state may legitimately differ). */
  readonly controlled = new Set<number>();
  readonly violations: string[] = [];

  count(op: string, result: string): void {
    const m = this.counts.get(op) ?? new Map<string, number>();
    m.set(result, (m.get(result) ?? 0) + 1);
    this.counts.set(op, m);
  }

  ack(marker: string, id: number): void {
    const other = this.ackedIds.get(id);
    if (other !== undefined && other !== marker)
      this.violations.push(`job id ${id} was given to two acknowledged submits: ${other} and ${marker}`);
    this.acked.set(marker, id);
    this.ackedIds.set(id, marker);
  }

  /** A dispatch record seen through the API: the same run must always show the same record. */
  noteRecord(jobId: number, run: number, record: unknown, at_ms: number): void {
    if (record === null || record === undefined || run <= 0) return;
    const key = `${jobId}:${run}`;
    const json = canonical(record);
    const prev = this.records.get(key);
    if (prev === undefined) this.records.set(key, { json, seenAt_ms: at_ms });
    else if (prev.json !== json)
      this.violations.push(
        `job ${jobId} run ${run}: the dispatch record read at ${at_ms.toFixed(0)} ms differs from the one read at ${prev.seenAt_ms.toFixed(0)} ms`,
      );
  }

  /** One line of a worker's JSON log. */
  noteWorkerLine(line: string): void {
    if (!line.includes('"job finished"') && !line.includes('"job launch-error"')) return;
    try {
      const o = JSON.parse(line) as { msg: string; jobId: number; run: number; exitCode?: number | null };
      const kind = o.msg.slice(4);
      this.finished.set(`${o.jobId}:${o.run}`, { jobId: o.jobId, run: o.run, kind, exitCode: o.exitCode ?? null });
    } catch {
      // a line cut by the log buffer: ignore
    }
  }

  total(op: string): number {
    let n = 0;
    for (const v of this.counts.get(op)?.values() ?? []) n += v;
    return n;
  }
}
