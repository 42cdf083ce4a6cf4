#!/usr/bin/env node
// `npm run crash-test -- --kills N [--seed S] [--appenders K] [--segment-bytes B] [--preallocate-bytes B]`: the crash test
// of crash.test.ts, longer (the WAL, then the snapshot store with --snapshot-kills M). Prints one line per kill and a summary; exits 1 on the first lost save,
// 2 on a bad command line (`--help` lists the options and their defaults).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runCrashTest, runSnapshotCrashTest } from './crash-harness.js';

/** Each option: its default and what it is (the `--help` text). */
const OPTIONS = {
  kills: { fallback: 200, min: 0, help: 'number of SIGKILLs' },
  seed: {
    fallback: Date.now() % 1_000_000,
    min: 0,
    help: 'seed of the workload and of the kill moments (default: from the clock)',
  },
  appenders: { fallback: 8, min: 1, help: 'concurrent appenders in the child' },
  'segment-bytes': { fallback: 64 * 1024, min: 1, help: 'segment size (small, to roll over often)' },
  'preallocate-bytes': {
    fallback: 0,
    min: 0,
    help: 'zeros kept ahead of the last record (WalOptions.preallocateBytes; the controller keeps 1 MiB)',
  },
  'kill-within-ms': { fallback: 150, min: 0, help: 'the kill lands within this many ms of the child being ready' },
  'budget-s': { fallback: 1800, min: 1, help: 'stop after this many seconds' },
  'snapshot-kills': {
    fallback: 20,
    min: 0,
    help: 'SIGKILLs of a child committing snapshots (the snapshot store test)',
  },
} as const;
type Name = keyof typeof OPTIONS;

const USAGE = [
  'npm run crash-test -- [--kills N] [--seed S] [--appenders K] [--segment-bytes B] [--preallocate-bytes B] [--kill-within-ms MS] [--budget-s S] [--snapshot-kills M]',
  ...Object.entries(OPTIONS).map(
    ([k, spec]) =>
      `  --${`${k} <n>`.padEnd(20)} ${spec.help}${spec.help.includes('(default') ? '' : ` (default: ${spec.fallback})`}`,
  ),
].join('\n');

function usage(message: string): never {
  process.stderr.write(`crash-test: ${message}\nusage: ${USAGE}\n`);
  process.exit(2);
}

/** node:util's parseArgs, strict (as harness/cli-args.ts, which wal/ may not import). */
function readArgs(argv: string[]): Record<Name, number> {
  let values: Record<string, string | boolean | undefined> = {};
  try {
    values = parseArgs({
      args: argv,
      options: {
        ...Object.fromEntries(Object.keys(OPTIONS).map((k) => [k, { type: 'string' as const }])),
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    usage((err as Error).message);
  }
  if (values['help'] === true) {
    process.stdout.write(`usage: ${USAGE}\n`);
    process.exit(0);
  }
  const out = {} as Record<Name, number>;
  for (const [k, spec] of Object.entries(OPTIONS) as Array<[Name, (typeof OPTIONS)[Name]]>) {
    const text = values[k];
    if (typeof text !== 'string') {
      out[k] = spec.fallback;
      continue;
    }
    const n = text.trim() === '' ? NaN : Number(text);
    if (!Number.isSafeInteger(n) || n < spec.min)
      usage(`--${k} must be a whole number of at least ${spec.min}, not "${text}"`);
    out[k] = n;
  }
  return out;
}

const o = readArgs(process.argv.slice(2));

const dir = mkdtempSync(join(tmpdir(), 'xce-crash-'));
const seed = o.seed;
console.log(
  `crash-test: seed ${seed}, ${o.kills} kills, ${o.appenders} appenders, segments of ${o['segment-bytes']} B, ` +
    `${o['preallocate-bytes']} B preallocated, dir ${dir}`,
);
try {
  const r = await runCrashTest({
    dir: join(dir, 'wal'),
    seed,
    kills: o.kills,
    appenders: o.appenders,
    segmentBytes: o['segment-bytes'],
    preallocateBytes: o['preallocate-bytes'],
    killWithinMs: o['kill-within-ms'],
    budgetMs: o['budget-s'] * 1000,
    onKill: (k) =>
      console.log(
        `kill ${k.kill}: acked save #${k.ackedSave}, recovered save #${k.recoveredSave} (entries ${k.firstIndex}..${k.lastIndex}` +
          `${k.tornTailBytes ? `, torn tail of ${k.tornTailBytes} B cut` : ''})`,
      ),
  });
  const sr = await runSnapshotCrashTest({
    location: join(dir, 'snap'),
    seed,
    kills: o['snapshot-kills'],
    budgetMs: o['budget-s'] * 1000,
  });
  console.log(`crash-test: snapshot store OK: ${sr.kills} kills, last snapshot ${sr.lastIndex} whole and current`);
  console.log(
    `crash-test: OK: ${r.kills} kills, ${r.saves} saves, ${r.tornTails} torn tails cut, no acknowledged save lost (seed ${seed})`,
  );
  rmSync(dir, { recursive: true, force: true });
} catch (e) {
  console.error(`crash-test: FAILED (seed ${seed}; directory kept at ${dir}):\n${(e as Error).message}`);
  process.exitCode = 1;
}
