// The drill's summary as an operator reads it: faults by kind, failover times, operations by
// result, the checks, and every violation with the seed that replays the schedule.

import type { DrillReport, FaultRecord } from './drill.js';
import { failoverStats } from './drill.js';

const ms = (x: number): string => `${x.toFixed(0)} ms`;

/** One line per fault kind (and partition shape) with the figures `pick` gives its faults. */
function timesByKind(faults: readonly FaultRecord[], pick: (f: FaultRecord) => number | undefined): string[] {
  const byKind = new Map<string, number[]>();
  for (const f of faults) {
    const x = pick(f);
    const key = f.variant ? `${f.kind}: ${f.variant}` : f.kind;
    if (x !== undefined) byKind.set(key, [...(byKind.get(key) ?? []), x]);
  }
  return [...byKind].map(([k, xs]) => {
    const s = failoverStats(xs)!;
    return `  ${k.padEnd(28)} n=${String(s.n).padStart(3)}  ${ms(s.min_ms)} / ${ms(s.median_ms)} / ${ms(s.p99_ms)} / ${ms(s.max_ms)}`;
  });
}

export function formatSummary(r: DrillReport): string {
  const lines: string[] = [];
  lines.push(
    `drill: seed ${r.seed}, ${r.duration_s} s asked, ${r.elapsed_s.toFixed(1)} s run, ${r.target === 'own' ? 'on a cluster it started' : 'attached to a running cluster'}${r.aborted ? ' (STOPPED by Ctrl-C: no checks)' : ''}`,
  );
  const counts = new Map<string, number>();
  for (const f of r.faults) counts.set(f.kind, (counts.get(f.kind) ?? 0) + 1);
  lines.push(`faults injected: ${r.faults.length}${[...counts].map(([k, n]) => `, ${k} ${n}`).join('')}`);
  for (const s of r.skipped) lines.push(`  skipped ${s.kind}: ${s.reason}`);
  lines.push(`snapshot catch-ups of wiped nodes: ${r.snapshotInstalls}`);
  lines.push('time from the fault to the first acknowledged submit (min / median / p99 / max):');
  lines.push(...timesByKind(r.faults, (f) => f.failover_ms ?? undefined));
  lines.push('time from the end of the fault until every controller is back and caught up (min / median / p99 / max):');
  lines.push(...timesByKind(r.faults, (f) => f.recovered_ms));
  lines.push('operations by result:');
  for (const [op, m] of Object.entries(r.ops))
    lines.push(
      `  ${op.padEnd(24)} ${Object.entries(m)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')}`,
    );
  lines.push(`jobs acknowledged: ${r.jobs}`);
  if (r.linearizability)
    lines.push(
      `linearizability: ${r.linearizability.verdict} (${r.linearizability.operations} operations, ${r.linearizability.steps} steps, ${ms(r.linearizability.check_ms)})`,
    );
  lines.push('checks:');
  for (const c of r.checks) lines.push(`  ${c.skipped ? 'SKIP' : c.ok ? 'PASS' : 'FAIL'}  ${c.name}: ${c.detail}`);
  if (r.violations.length > 0) {
    lines.push(
      `VIOLATIONS (${r.violations.length}); replay the schedule with --seed ${r.seed} --duration ${r.duration_s}:`,
    );
    for (const v of r.violations) lines.push(`  ${v}`);
  } else if (!r.aborted) lines.push('no violation');
  return lines.join('\n');
}
