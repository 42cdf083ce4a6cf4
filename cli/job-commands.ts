// The xcecli commands that look into or control one job after its submit (cli/xcecli-program.ts
// registers them under `jobs`): `peek`, `kill|requeue|restart`, `hold|release|suspend|resume` and
// `modify`. Also the job-id argument and the repeatable-option collector the program shares.

import type { Command } from 'commander';
import type { XceClient } from './client.js';
import { printable, reportError } from './output.js';
import { UsageError, modifyChanges, type SubmitFlags } from './submit-args.js';
import { positiveInteger } from './numeric-flags.js';
import { formatJobId, parseJobId } from '../model/job-id.js';
import { PEEK_BYTES_MAX } from '../api/protocol.js';
import { peek, PEEK_FOLLOW_S_DEFAULT, PEEK_FOLLOW_S_MAX, PEEK_TAIL_BYTES_DEFAULT } from './peek.js';

interface Globals {
  json?: boolean;
}
type Run = (fn: (c: XceClient, g: Globals, color: boolean) => Promise<void>) => () => Promise<void>;
type Print = (g: Globals, result: unknown, human: () => string) => void;

interface Ctx {
  readonly jobs: Command;
  readonly run: Run;
  readonly print: Print;
  readonly setCode: (code: number) => void;
}

/** A job id argument: `42`, or `42[7]` for an element of job array 42 (model/job-id.ts); else a UsageError naming it. */
export const jobId = (text: string): number => {
  if (text.includes('[')) {
    const n = parseJobId(text);
    if (n === null)
      throw new UsageError(`job id must be ID or ID[INDEX] (e.g. 42 or 42[7]), got ${JSON.stringify(text)}`);
    return n;
  }
  return positiveInteger('job id', text);
};

/** commander's collector of a repeatable option. */
export function collect(value: string, prev: string[] = []): string[] {
  return [...prev, value];
}

/** Adds the commands, in their help order, to `jobs`. */
export function registerJobCommands(jobs: Command, run: Run, print: Print, setCode: (code: number) => void): void {
  const ctx: Ctx = { jobs, run, print, setCode };
  registerPeek(ctx);
  registerSignals(ctx);
  registerHoldSuspend(ctx);
  registerModify(ctx);
}

function registerPeek({ jobs, run }: Ctx): void {
  jobs
    .command('peek')
    .description(
      "show the stdout of a running job, read by its host's worker (like bpeek); --follow keeps printing it until the job ends",
    )
    .argument('<id>', 'job id')
    .option('-f, --follow', 'keep printing new output until the job ends (or --for seconds have passed)')
    .option(
      '--bytes <n>',
      `how much of the end of the output to show first (default ${PEEK_TAIL_BYTES_DEFAULT}, at most ${PEEK_BYTES_MAX})`,
    )
    .option(
      '--for <seconds>',
      `with --follow: stop after this many seconds (default ${PEEK_FOLLOW_S_DEFAULT}, at most ${PEEK_FOLLOW_S_MAX})`,
    )
    .action(async (id: string, o: { follow?: boolean; bytes?: string; for?: string }) =>
      run(async (c, g) => {
        const n = jobId(id);
        const tail =
          o.bytes === undefined ? PEEK_TAIL_BYTES_DEFAULT : positiveInteger('--bytes', o.bytes, PEEK_BYTES_MAX);
        const follow_s =
          o.for === undefined ? PEEK_FOLLOW_S_DEFAULT : positiveInteger('--for', o.for, PEEK_FOLLOW_S_MAX);
        if (o.for !== undefined && o.follow !== true) throw new UsageError('--for goes with --follow');
        await peek(c, n, { tail, follow_s: o.follow === true ? follow_s : 0, json: g.json === true });
      })(),
    );
}

function registerSignals({ jobs, run, print }: Ctx): void {
  for (const action of ['kill', 'requeue', 'restart'] as const) {
    jobs
      .command(action)
      .description(`${action} a job, a whole job array (ID) or one element (ID[INDEX])`)
      .argument('<id>', 'job id: ID or ID[INDEX]')
      .action(async (id: string) =>
        run(async (c, g) => {
          const n = jobId(id);
          const r = await c.call(`jobs.${action}`, { id: n });
          print(g, r, () => `Job <${formatJobId(n)}>: ${action} requested.\n`);
        })(),
      );
  }
}

function registerHoldSuspend({ jobs, run, setCode }: Ctx): void {
  const past = { hold: 'held', release: 'released', suspend: 'suspended', resume: 'resumed' } as const;
  const about = {
    hold: 'hold pending jobs: they are not scheduled (pend reason "held by user U") until released; yours, or any with job:control',
    release: 'release held jobs: they are scheduled again',
    suspend: "suspend a running job: its worker stops the job's processes (SIGSTOP), state SUSP; it keeps its slots",
    resume: 'resume a suspended job: its worker continues the processes (SIGCONT), state RUN',
  } as const;
  for (const action of ['hold', 'release', 'suspend', 'resume'] as const) {
    const many = action === 'hold' || action === 'release';
    jobs
      .command(action)
      .description(about[action])
      .argument(many ? '<id...>' : '<id>', many ? 'job ids' : 'job id')
      .action(async (ids: string[] | string) =>
        run(async (c, g) => {
          // Every id is checked before anything is sent; then each job is asked in turn, and the
          // exit status is that of the last refusal (the others are reported too).
          const ns = (Array.isArray(ids) ? ids : [ids]).map(jobId);
          const results: unknown[] = [];
          for (const n of ns) {
            try {
              const r = await c.call(`jobs.${action}`, { id: n });
              results.push({ ok: true, ...r });
              if (!g.json) process.stdout.write(`Job <${formatJobId(n)}>: ${past[action]}.\n`);
            } catch (err) {
              if (ns.length === 1) throw err;
              setCode(reportError('xcecli', err, false));
              results.push({ ok: false, jobId: n, error: err instanceof Error ? err.message : String(err) });
            }
          }
          if (g.json) process.stdout.write(`${JSON.stringify(ns.length === 1 ? results[0] : { results })}\n`);
        })(),
      );
  }
}

function registerModify({ jobs, run, print }: Ctx): void {
  jobs
    .command('modify')
    .description(
      'change a pending job (like bmod): xcecli jobs modify ID [--app NAME] [-n N] [-R RESREQ] [-q QUEUE] [-l runtime=...] [-e K=V] [--name NAME]; admitted as a submit would be',
    )
    .argument('<id>', 'job id')
    .option(
      '-a, --app <name>',
      'move the job to this application profile (app:use on it; the additive rule against it)',
    )
    .option('-q, --queue <name>', 'queue (queue:submit on it)')
    .option('-J, --name <name>', 'job name')
    .option('-n, --tasks <n>', "number of tasks (replaces the job's)")
    .option('-R, --resreq <resreq>', "the job's resource requirement (replaces the job's own -R)")
    .option('-e, --env <NAME=VALUE>', 'set an environment variable (repeatable; the others are kept)', collect)
    .option('-l, --limit <name=value>', 'set a limit: runtime=1h, memory=4G, cpu=2h, tasks=N (repeatable)', collect)
    .action(async (id: string, o: SubmitFlags) =>
      run(async (c, g) => {
        const n = jobId(id);
        const r = await c.call('jobs.modify', { id: n, changes: modifyChanges(o) });
        print(g, r, () => `Job <${formatJobId(n)}>: modified: ${printable(r.changes)}\n`);
      })(),
    );
}
