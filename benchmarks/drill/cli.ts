#!/usr/bin/env node
// `npm run drill -- [--duration 60] [--seed N] [--json FILE]`: the failover drill (drill.ts) with
// a progress line (updated in place on a terminal, a plain line every 10 s otherwise) and Ctrl-C
// that stops it and leaves no process behind. Exit code 0: every check passed; 1: a violation;
// 2: bad arguments; 130: stopped by Ctrl-C.

import { writeFileSync } from 'node:fs';
import { DRILL_DURATION_S_DEFAULT, runDrill, type DrillProgress } from './drill.js';
import { formatSummary } from './summary.js';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function positive(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) {
    process.stderr.write(`drill: --${name} must be a positive whole number, not "${text}"\n`);
    process.exit(2);
  }
  return n;
}

const duration_s = positive('duration', arg('duration'), DRILL_DURATION_S_DEFAULT);
const seed = positive('seed', arg('seed'), Math.floor(Math.random() * 1_000_000) + 1);
const jsonOut = arg('json');
const tty = process.stdout.isTTY === true;
let lastPlain = 0;

function progress(p: DrillProgress): void {
  const line = `[${p.elapsed_s.toFixed(0).padStart(4)} s / ${p.duration_s} s] ${p.phase}: faults ${p.faults} (leader kills ${p.leaderKills}), submits ${p.submitsOk} ok / ${p.submitsUncertain} uncertain, reads ${p.reads}`;
  if (tty) process.stdout.write(`\r\x1b[2K${line}`);
  else if (p.elapsed_s - lastPlain >= 10) {
    lastPlain = p.elapsed_s;
    process.stdout.write(`${line}\n`);
  }
}

const abort = new AbortController();
process.on('SIGINT', () => {
  if (abort.signal.aborted) process.exit(130);
  process.stdout.write('\nCtrl-C: stopping the drill and its processes (Ctrl-C again to exit at once)\n');
  abort.abort();
});

const report = await runDrill({
  duration_s,
  seed,
  signal: abort.signal,
  progress,
  log: (l) => process.stdout.write(`${tty ? '\r\x1b[2K' : ''}${l}\n`),
});
if (tty) process.stdout.write('\n');
process.stdout.write(`${formatSummary(report)}\n`);
if (jsonOut) writeFileSync(jsonOut, JSON.stringify(report, null, 2));
process.exit(report.aborted ? 130 : report.violations.length > 0 ? 1 : 0);
