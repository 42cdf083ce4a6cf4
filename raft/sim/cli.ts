#!/usr/bin/env node
// `npm run sim:raft -- --seeds N [--from S]` sweeps seeds S..S+N-1 (default S=1, N=1000) with a progress
// line; `npm run sim:raft -- --seed S [--trace]` replays one seed exactly and prints its trace.
// A failing seed prints the seed, the violation and the last lines of a readable trace; the exit
// status is 1. Pure apart from process.argv and stdout.
import { SIM_TRACE_LINES_MAX, runSeed } from './simulation.js';
import type { SimResult } from './simulation.js';

/** Upper bound on one sweep (the CLI refuses more). */
const SIM_SEEDS_MAX = 10_000_000;

interface Args {
  seeds: number;
  from: number;
  seed: number | undefined;
  trace: boolean;
}

function usage(msg: string): never {
  process.stderr.write(`${msg}\nusage: sim [--seeds N] [--from S] | --seed S [--trace]\n`);
  process.exit(2);
}

function parseArgs(argv: string[]): Args {
  const a: Args = { seeds: 1000, from: 1, seed: undefined, trace: false };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const num = (): number => {
      const v = Number(argv[++i]);
      if (!Number.isSafeInteger(v) || v < 0) usage(`${k} needs a non-negative integer`);
      return v;
    };
    if (k === '--seeds') a.seeds = num();
    else if (k === '--from') a.from = num();
    else if (k === '--seed') a.seed = num();
    else if (k === '--trace') a.trace = true;
    else usage(`unknown argument ${k}`);
  }
  if (a.seeds < 1 || a.seeds > SIM_SEEDS_MAX) usage(`--seeds must be in 1..${SIM_SEEDS_MAX}`);
  return a;
}

function report(res: SimResult, allLines: boolean): void {
  const lines = allLines ? res.trace : res.trace.slice(-SIM_TRACE_LINES_MAX);
  if (!allLines && res.trace.length > lines.length)
    process.stdout.write(
      `... (${res.trace.length - lines.length} earlier trace lines omitted; replay with --seed ${res.seed} --trace)\n`,
    );
  process.stdout.write(lines.join('\n') + '\n');
}

function main(): void {
  const args = parseArgs(process.argv.slice(2));
  if (args.seed !== undefined) {
    const res = runSeed(args.seed, true);
    if (args.trace || !res.ok) report(res, args.trace);
    process.stdout.write(
      `seed ${res.seed}: ${res.ok ? 'ok' : `FAILED ${res.error?.message}`} ${JSON.stringify(res.stats)}\n`,
    );
    process.exit(res.ok ? 0 : 1);
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
      process.exit(1);
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
