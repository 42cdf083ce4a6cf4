#!/usr/bin/env node
// `npm run drill -- [--duration 60] [--seed N] [--faults kill-leader,partition,...] [--min-faults N] [--json FILE]`:
// the failover drill on a cluster it starts (run.ts prints progress and the summary; Ctrl-C stops
// it and leaves no process behind). Exit code 0: every check passed; 1: a violation; 2: bad
// arguments; 130: stopped by Ctrl-C. `xceadmin drill --attach` drives a running cluster instead.

import { parseCommandLine } from '../cli-args.js';
import { DRILL_DURATION_S_DEFAULT } from './drill.js';
import { drillCommand, parseFaultKinds } from './run.js';
import { FAULT_KINDS, type FaultKind } from './schedule.js';

const cl = parseCommandLine(
  'drill',
  'npm run drill -- [--duration S] [--seed N] [--faults KIND,...] [--min-faults N] [--json FILE]\n' +
    `  --duration S      seconds of load and faults (default ${DRILL_DURATION_S_DEFAULT})\n` +
    '  --seed N          seed of the fault schedule (default: a random one, printed)\n' +
    `  --faults KINDS    the fault kinds to inject, comma-separated: ${FAULT_KINDS.join(', ')} (default: all)\n` +
    '  --min-faults N    go on past the duration until N faults were injected\n' +
    '  --json FILE       also write the report as JSON',
  {
    duration: { type: 'string' },
    seed: { type: 'string' },
    'min-faults': { type: 'string' },
    json: { type: 'string' },
    faults: { type: 'string' },
  },
);
const duration_s = cl.whole('duration', DRILL_DURATION_S_DEFAULT);
const seed = cl.whole('seed', Math.floor(Math.random() * 1_000_000) + 1);
const minFaults = cl.whole('min-faults', 0);
const { json, faults } = cl.values;
let kinds: FaultKind[] | undefined;
try {
  kinds = faults === undefined ? undefined : parseFaultKinds(faults);
} catch (err) {
  cl.fail((err as Error).message);
}
process.exit(
  await drillCommand({ duration_s, seed, minFaults, ...(kinds ? { kinds } : {}), ...(json ? { json } : {}) }),
);
