#!/usr/bin/env node
// `npm run drill -- [--duration 60] [--seed N] [--faults kill-leader,partition,...] [--min-faults N] [--json FILE]`:
// the failover drill on a cluster it starts (run.ts prints progress and the summary; Ctrl-C stops
// it and leaves no process behind). Exit code 0: every check passed; 1: a violation; 2: bad
// arguments; 130: stopped by Ctrl-C. `xceadmin drill --attach` drives a running cluster instead.

import { DRILL_DURATION_S_DEFAULT } from './drill.js';
import { drillCommand, parseFaultKinds } from './run.js';
import type { FaultKind } from './schedule.js';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function usage(message: string): never {
  process.stderr.write(`drill: ${message}\n`);
  process.exit(2);
}

function positive(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) usage(`--${name} must be a positive whole number, not "${text}"`);
  return n;
}

const duration_s = positive('duration', arg('duration'), DRILL_DURATION_S_DEFAULT);
const seed = positive('seed', arg('seed'), Math.floor(Math.random() * 1_000_000) + 1);
const minFaults = positive('min-faults', arg('min-faults'), 0);
const json = arg('json');
const faults = arg('faults');
let kinds: FaultKind[] | undefined;
try {
  kinds = faults === undefined ? undefined : parseFaultKinds(faults);
} catch (err) {
  usage((err as Error).message);
}
process.exit(
  await drillCommand({ duration_s, seed, minFaults, ...(kinds ? { kinds } : {}), ...(json ? { json } : {}) }),
);
