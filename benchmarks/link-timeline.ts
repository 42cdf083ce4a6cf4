// Where each simulated host's time goes between losing the leader and registering with the new
// one (hosts.bench.ts, issue 14): the fleet (host-fleet.ts) records every step its leader links
// trace (daemon/worker/link-contract.ts LinkTraceEvent) since each host's last loss; this sums,
// per host, the time spent waiting (spread, back-off, busy) and the time each dial took until its
// answer (registered, not-leader with or without a hint, unreachable, busy...), and reports the
// mean of each over all hosts and over the slowest tenth, the dials each answer had, and a
// histogram of the re-registration times.

import type { LinkTraceEvent } from '../daemon/worker/link-contract.js';
import { quantile } from '../harness/stats.js';

/**
 * One traced step of a host, compact for IPC: [epoch ms, kind, answer, wait reason or URL dialled,
 * wait ms, and for an `unreachable` answer the start of its error].
 */
export type TimelineStep =
  | readonly [number, LinkTraceEvent['kind'], string, number]
  | readonly [number, LinkTraceEvent['kind'], string, number, string];

/** How much of an `unreachable` answer's error a step keeps (enough to tell a refusal from a timeout). */
const ERROR_CHARS_MAX = 40;

/** A host's trace event as a step at `t_ms`. */
export function stepOf(t_ms: number, e: LinkTraceEvent): TimelineStep {
  if (e.kind === 'answer' && e.answer === 'unreachable' && e.detail !== undefined)
    return [t_ms, 'answer', e.answer, 0, e.detail.slice(0, ERROR_CHARS_MAX)];
  if (e.kind === 'answer') return [t_ms, 'answer', e.answer, 0];
  if (e.kind === 'wait') return [t_ms, 'wait', e.why, e.ms];
  return [t_ms, e.kind, e.url, 0];
}

/** Per host: ms spent in each phase ("wait:spread", "dial→registered"...) from the kill to its registration. */
export function phasesOf(steps: readonly TimelineStep[], tKill: number): Map<string, number> | null {
  const phases = new Map<string, number>();
  const add = (k: string, ms: number): void => void phases.set(k, (phases.get(k) ?? 0) + ms);
  let prev = tKill;
  let phase = 'until the loss was seen';
  let answeredSinceDial = true;
  for (const [t, kind, what] of steps) {
    if (t < tKill) continue;
    if (kind === 'lost') {
      add(phase, t - prev);
      [prev, phase] = [t, 'after the loss, before its first wait'];
    } else if (kind === 'wait') {
      add(phase, t - prev);
      [prev, phase] = [t, `wait: ${what}`];
    } else if (kind === 'dial') {
      add(phase, t - prev);
      [prev, phase, answeredSinceDial] = [t, 'dial (no answer)', false];
    } else if (kind === 'answer' && !answeredSinceDial) {
      answeredSinceDial = true;
      add(`dial → ${what}`, t - prev);
      [prev, phase] = [t, `after ${what}`];
      if (what === 'registered') return phases;
    }
  }
  return null;
}

/** Answers per dial after the kill, over every host. */
function answersOf(all: readonly (readonly TimelineStep[])[], tKill: number): Map<string, number> {
  const n = new Map<string, number>();
  for (const steps of all)
    for (const [t, kind, what] of steps) if (t >= tKill && kind === 'answer') n.set(what, (n.get(what) ?? 0) + 1);
  return n;
}

/**
 * Answers per dial after the kill by the controller dialled (`roleOf` names it from the dial's URL:
 * "killed", "new leader", "follower"), as "answer @ role" (an `unreachable` with the start of its
 * error): which controller each host's time went to.
 */
export function answersByTarget(
  all: readonly (readonly TimelineStep[])[],
  tKill: number,
  roleOf: (url: string) => string,
): Record<string, number> {
  const n = new Map<string, number>();
  for (const steps of all) {
    let role = '?';
    for (const step of steps) {
      const [t, kind, what] = step;
      if (kind === 'dial') role = roleOf(what);
      if (t < tKill || kind !== 'answer') continue;
      const error = step[4] === undefined ? '' : ` (${step[4].replace(/^(\w+ \w+).*$/, '$1')})`;
      const key = `${what}${error} @ ${role}`;
      n.set(key, (n.get(key) ?? 0) + 1);
    }
  }
  return Object.fromEntries([...n].sort((a, b) => b[1] - a[1]));
}

export interface TimelineReport {
  readonly hosts: number;
  /** Hosts whose trace reached `registered` after the kill. */
  readonly traced: number;
  /** Phase → mean ms per host, over every traced host and over the slowest tenth. */
  readonly mean_ms: Record<string, { all: number; slowest10: number }>;
  readonly answers: Record<string, number>;
  /** Hosts re-registered within each 500 ms after the kill. */
  readonly histogram: Record<string, number>;
}

const BIN_MS = 500;

/** The report of every host's steps (`regs[i]`: when host i re-registered, epoch ms). */
export function timelineReport(
  all: readonly (readonly TimelineStep[])[],
  regs: readonly number[],
  tKill: number,
): TimelineReport {
  const hosts = all
    .map((steps, i) => ({ phases: phasesOf(steps, tKill), reg: (regs[i] ?? 0) - tKill }))
    .filter((h): h is { phases: Map<string, number>; reg: number } => h.phases !== null)
    .sort((a, b) => a.reg - b.reg);
  const slow = hosts.slice(Math.floor(hosts.length * 0.9));
  const keys = [...new Set(hosts.flatMap((h) => [...h.phases.keys()]))].sort();
  const mean = (hs: typeof hosts, k: string): number =>
    hs.length === 0 ? 0 : Math.round(hs.reduce((a, h) => a + (h.phases.get(k) ?? 0), 0) / hs.length);
  const histogram: Record<string, number> = {};
  for (const h of hosts) {
    const bin = Math.floor(h.reg / BIN_MS) * BIN_MS;
    const key = `${(bin / 1000).toFixed(1)}-${((bin + BIN_MS) / 1000).toFixed(1)} s`;
    histogram[key] = (histogram[key] ?? 0) + 1;
  }
  return {
    hosts: all.length,
    traced: hosts.length,
    mean_ms: Object.fromEntries(keys.map((k) => [k, { all: mean(hosts, k), slowest10: mean(slow, k) }])),
    answers: Object.fromEntries(answersOf(all, tKill)),
    histogram,
  };
}

/** The report as lines of text. */
export function timelineLines(r: TimelineReport, regs_ms: readonly number[]): string[] {
  const sorted = [...regs_ms].sort((a, b) => a - b);
  const lines = [
    `per-host timeline after the kill (${r.traced} of ${r.hosts} traced to registered; p90 ${quantile(sorted, 0.9)} ms):`,
    '  phase: mean ms per host, all / slowest 10 %',
  ];
  for (const [k, v] of Object.entries(r.mean_ms)) lines.push(`    ${k}: ${v.all} / ${v.slowest10}`);
  lines.push(
    `  answers to dials: ${Object.entries(r.answers)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  );
  lines.push(
    `  re-registered per 0.5 s: ${Object.entries(r.histogram)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  );
  return lines;
}
