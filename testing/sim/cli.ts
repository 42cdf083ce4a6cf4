#!/usr/bin/env node
// `npm run sim -- --seeds N [--from S] [--workers W]` sweeps seeds S..S+N-1 of the whole-controller
// simulator (testing/sim/controller-sim.ts) on W worker threads (default: one per core, at most 8),
// with a progress line; `npm run sim -- --seed S [--trace]` replays one seed exactly and prints its
// trace. `--inject-nondeterminism` gives one node a perturbed apply: the sweep must then FAIL (it is
// how the checks themselves are checked). A failing seed prints the seed, the violation and the last
// lines of its trace, and the exit status is 1. A bad command line exits 2; `--help` prints the
// usage. The Raft-only simulator is `npm run sim:raft`.
import { availableParallelism } from 'node:os';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import {
  runControllerSeed,
  SIM_TRACE_LINES_MAX,
  type ControllerSimResult,
  type ControllerSimStats,
} from './controller-sim.js';
import { parseCommandLine, stringOptions } from '../../harness/cli-args.js';
import { exitAfterOutput, nonNegative, reportTrace } from '../../raft/sim/cli-output.js';

/** Upper bound on one sweep (the CLI refuses more). */
const SIM_SEEDS_MAX = 10_000_000;
const SIM_WORKERS_MAX = 8;

interface Args {
  seeds: number;
  from: number;
  seed: number | undefined;
  trace: boolean;
  workers: number;
  inject: boolean;
}

/** What a worker thread is given and what it sends back per seed. */
interface Job {
  readonly from: number;
  readonly last: number;
  readonly stride: number;
  readonly offset: number;
  readonly inject: boolean;
}
type WorkerMsg = { seed: number; ok: boolean; error: string | undefined; stats: ControllerSimStats };

const USAGE =
  'npm run sim -- [--seeds N] [--from S] [--workers W] [--inject-nondeterminism] | --seed S [--trace] [--inject-nondeterminism]';

function readArgs(argv: string[]): Args {
  const cl = parseCommandLine(
    'sim',
    USAGE,
    {
      ...stringOptions('seeds', 'from', 'seed', 'workers'),
      trace: { type: 'boolean' },
      'inject-nondeterminism': { type: 'boolean' },
    },
    argv,
  );
  const v = cl.values;
  const num = (name: string, raw: string | undefined, fallback: number) => nonNegative(cl.fail, name, raw, fallback);
  const a: Args = {
    seeds: num('seeds', v.seeds, 1000),
    from: num('from', v.from, 1),
    seed: v.seed === undefined ? undefined : num('seed', v.seed, 0),
    trace: v.trace === true,
    workers: num('workers', v.workers, Math.min(SIM_WORKERS_MAX, availableParallelism())),
    inject: v['inject-nondeterminism'] === true,
  };
  if (a.seeds < 1 || a.seeds > SIM_SEEDS_MAX) cl.fail(`--seeds must be in 1..${SIM_SEEDS_MAX}`);
  if (a.workers < 1 || a.workers > SIM_WORKERS_MAX) cl.fail(`--workers must be in 1..${SIM_WORKERS_MAX}`);
  return a;
}

const report = (res: ControllerSimResult, allLines: boolean): void => reportTrace(res, allLines, SIM_TRACE_LINES_MAX);

async function one(args: Args, seed: number): Promise<void> {
  const res = await runControllerSeed(seed, { trace: true, injectNondeterminism: args.inject });
  if (args.trace || !res.ok) report(res, args.trace);
  process.stdout.write(
    `seed ${res.seed}: ${res.ok ? 'ok' : `FAILED ${res.error?.message}`} ${JSON.stringify(res.stats)}\n`,
  );
  exitAfterOutput(res.ok ? 0 : 1);
}

async function sweep(args: Args): Promise<void> {
  const last = args.from + args.seeds - 1;
  const workers = Math.min(args.workers, args.seeds);
  const total: Record<string, number> = {};
  const step = Math.max(1, Math.floor(args.seeds / 200));
  const started = Date.now();
  let done = 0;
  let failed: WorkerMsg | undefined;
  const threads: Worker[] = [];
  await new Promise<void>((resolve, reject) => {
    let running = workers;
    for (let w = 0; w < workers; w++) {
      const job: Job = { from: args.from, last, stride: workers, offset: w, inject: args.inject };
      const t = new Worker(new URL(import.meta.url), { workerData: job });
      threads.push(t);
      t.on('message', (m: WorkerMsg) => {
        done++;
        for (const [k, v] of Object.entries(m.stats)) total[k] = (total[k] ?? 0) + v;
        if (!m.ok && (failed === undefined || m.seed < failed.seed)) failed = m;
        if (failed !== undefined) for (const o of threads) void o.terminate();
        if (done % step === 0 || done === args.seeds) {
          const s = (Date.now() - started) / 1000;
          process.stdout.write(
            `\rseeds ${done}/${args.seeds} ok, ${s.toFixed(0)} s (${(done / s).toFixed(0)} seeds/s, elections ${total['elections']}, applies ${total['applies']})`,
          );
        }
      });
      t.on('error', reject);
      t.on('exit', () => {
        if (--running === 0) resolve();
      });
    }
  });
  const f = failed;
  if (f !== undefined) {
    process.stdout.write(`\nseed ${f.seed} FAILED: ${f.error}\n`);
    const traced = await runControllerSeed(f.seed, { trace: true, injectNondeterminism: args.inject });
    report(traced, false);
    process.stdout.write(
      `seed ${f.seed}: FAILED ${f.error}\nreplay: npm run sim -- --seed ${f.seed} --trace${args.inject ? ' --inject-nondeterminism' : ''}\n`,
    );
    return exitAfterOutput(1);
  }
  const s = (Date.now() - started) / 1000;
  process.stdout.write(
    `\n${args.seeds} seeds (${args.from}..${last}) passed on ${workers} threads in ${s.toFixed(1)} s: every replica identical, no invariant, retry, election or liveness violation\ntotals: ${JSON.stringify(total)}\n`,
  );
  exitAfterOutput(0);
}

async function workerMain(job: Job): Promise<void> {
  for (let seed = job.from + job.offset; seed <= job.last; seed += job.stride) {
    const res = await runControllerSeed(seed, { injectNondeterminism: job.inject });
    const msg: WorkerMsg = { seed, ok: res.ok, error: res.error?.message, stats: res.stats };
    parentPort!.postMessage(msg);
    if (!res.ok) return;
  }
}

if (isMainThread) {
  const args = readArgs(process.argv.slice(2));
  await (args.seed !== undefined ? one(args, args.seed) : sweep(args));
} else {
  await workerMain(workerData as Job);
}
