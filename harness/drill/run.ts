// The drill as a command, shared by `npm run drill` (cli.ts) and `xceadmin drill`: a progress line
// (updated in place on a terminal, a plain line every 10 s otherwise), Ctrl-C that stops the drill
// and leaves no process behind (a second Ctrl-C exits at once), the summary, an optional JSON
// report. Returns the exit code: 0 every check passed, 1 a violation, 130 stopped by Ctrl-C.

import { writeFileSync } from 'node:fs';
import { runDrill, type DrillOptions, type DrillProgress } from './drill.js';
import { FAULT_KINDS, type FaultKind } from './schedule.js';
import { formatSummary } from './summary.js';

export type DrillCommandOptions = Omit<DrillOptions, 'log' | 'progress' | 'signal'> & { readonly json?: string };

/** Parses `--faults a,b`; throws RangeError naming the unknown kinds. */
export function parseFaultKinds(text: string): FaultKind[] {
  const asked = text
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  const unknown = asked.filter((k) => !(FAULT_KINDS as readonly string[]).includes(k));
  if (asked.length === 0 || unknown.length > 0)
    throw new RangeError(
      `--faults takes a comma-separated list of ${FAULT_KINDS.join(', ')}; ${unknown.length ? `unknown: ${unknown.join(', ')}` : 'it was empty'}`,
    );
  return asked as FaultKind[];
}

export async function drillCommand(
  opts: DrillCommandOptions,
  out: NodeJS.WriteStream = process.stdout,
): Promise<number> {
  const tty = out.isTTY === true;
  let lastPlain = 0;
  const progress = (p: DrillProgress): void => {
    const line = `[${p.elapsed_s.toFixed(0).padStart(4)} s / ${p.duration_s} s] ${p.phase}: faults ${p.faults} (leader kills ${p.leaderKills}), submits ${p.submitsOk} ok / ${p.submitsUncertain} uncertain, reads ${p.reads}`;
    if (tty) out.write(`\r\x1b[2K${line}`);
    else if (p.elapsed_s - lastPlain >= 10) {
      lastPlain = p.elapsed_s;
      out.write(`${line}\n`);
    }
  };
  const abort = new AbortController();
  const onInt = (): void => {
    if (abort.signal.aborted) process.exit(130);
    out.write('\nCtrl-C: stopping the drill and its processes (Ctrl-C again to exit at once)\n');
    abort.abort();
  };
  process.on('SIGINT', onInt);
  try {
    const { json, ...rest } = opts;
    const report = await runDrill({
      ...rest,
      signal: abort.signal,
      progress,
      log: (l) => out.write(`${tty ? '\r\x1b[2K' : ''}${l}\n`),
    });
    if (tty) out.write('\n');
    out.write(`${formatSummary(report)}\n`);
    if (json) writeFileSync(json, JSON.stringify(report, null, 2));
    return report.aborted ? 130 : report.violations.length > 0 ? 1 : 0;
  } finally {
    process.off('SIGINT', onInt);
  }
}
