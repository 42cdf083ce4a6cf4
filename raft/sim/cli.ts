#!/usr/bin/env node
// `npm run sim:raft -- --seeds N [--from S]` sweeps seeds S..S+N-1 (default S=1, N=1000) with a progress
// line; `npm run sim:raft -- --seed S [--trace]` replays one seed exactly and prints its trace.
// A failing seed prints the seed, the violation and the last lines of a readable trace; the exit
// status is 1. A bad command line exits 2; `--help` prints the usage. Pure apart from process.argv
// and stdout.
import { parseArgs } from 'node:util';
import { SIM_TRACE_LINES_MAX, runSeed } from './simulation.js';
import type { SimResult } from './simulation.js';
import { exitAfterOutput, nonNegative, reportTrace } from './cli-output.js';

/** Upper bound on one sweep (the CLI refuses more). */
const SIM_SEEDS_MAX = 10_000_000;

interface Args {
  seeds: number;
  from: number;
  seed: number | undefined;
  trace: boolean;
}

const USAGE = 'npm run sim:raft -- [--seeds N] [--from S] | --seed S [--trace]';

function usage(msg: string): never {
  process.stderr.write(`sim:raft: ${msg}\nusage: ${USAGE}\n`);
  process.exit(2);
}

/** node:util's parseArgs, strict (as harness/cli-args.ts, which raft/ may not import). */
function readArgs(argv: string[]): Args {
  let values: { seeds?: string; from?: string; seed?: string; trace?: boolean; help?: boolean } = {};
  try {
    values = parseArgs({
      args: argv,
      options: {
        seeds: { type: 'string' },
        from: { type: 'string' },
        seed: { type: 'string' },
        trace: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    usage((err as Error).message);
  }
  if (values.help) {
    process.stdout.write(`usage: ${USAGE}\n`);
    process.exit(0);
  }
  const num = (name: string, raw: string | undefined, fallback: number) => nonNegative(usage, name, raw, fallback);
  const a: Args = {
    seeds: num('seeds', values.seeds, 1000),
    from: num('from', values.from, 1),
    seed: values.seed === undefined ? undefined : num('seed', values.seed, 0),
    trace: values.trace === true,
  };
  if (a.seeds < 1 || a.seeds > SIM_SEEDS_MAX) usage(`--seeds must be in 1..${SIM_SEEDS_MAX}`);
  return a;
}

const report = (res: SimResult, allLines: boolean): void => reportTrace(res, allLines, SIM_TRACE_LINES_MAX);

function main(): void {
  const args = readArgs(process.argv.slice(2));
  if (args.seed !== undefined) {
    const res = runSeed(args.seed, true);
    if (args.trace || !res.ok) report(res, args.trace);
    process.stdout.write(
      `seed ${res.seed}: ${res.ok ? 'ok' : `FAILED ${res.error?.message}`} ${JSON.stringify(res.stats)}\n`,
    );
    return exitAfterOutput(res.ok ? 0 : 1);
  }
  const last = args.from + args.seeds - 1;
  const total: Record<string, number> = {};
  const step = Math.max(1, Math.floor(args.seeds / 100));
  for (let s = args.from; s <= last; s++) {
    const res = runSeed(s, false);
    for (const [k, v] of Object.entries(res.stats)) total[k] = (total[k] ?? 0) + v;
    if (!res.ok) {
      process.stdout.write(`\nseed ${s} FAILED: ${res.error?.message}\n`);
      const traced = runSeed(s, true);
      report(traced, false);
      process.stdout.write(
        `seed ${s}: FAILED ${res.error?.message}\nreplay: npm run sim:raft -- --seed ${s} --trace\n`,
      );
      return exitAfterOutput(1);
    }
    if ((s - args.from + 1) % step === 0 || s === last) {
      process.stdout.write(
        `\rseeds ${s - args.from + 1}/${args.seeds} ok (elections ${total['elections']}, events ${total['events']})`,
      );
    }
  }
  process.stdout.write(
    `\n${args.seeds} seeds (${args.from}..${last}) passed: no safety or liveness violation\ntotals: ${JSON.stringify(total)}\n`,
  );
}

main();
