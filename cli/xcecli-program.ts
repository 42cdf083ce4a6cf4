// The xcecli program (the entry point is cli/xcecli.ts): the users' command line. Talks to the controllers over WebSocket through the client
// library (cli/client.ts), which follows the leader and retries through failovers.

import { historyNote, parseWhen, renderJobHistory } from './history-render.js';
import { Command, CommanderError } from 'commander';
import type { XceClient } from './client.js';
import { timeoutOption, withClient } from './connect.js';
import { EXIT, useColor } from './output.js';
import {
  renderAppList,
  renderApp,
  renderDryRun,
  renderJobDetails,
  renderHostList,
  renderQueue,
  renderQueueList,
  renderJobList,
  renderSubmitted,
  renderWatchLine,
} from './render.js';
import { saveToken } from './settings.js';
import { UsageError, buildJobSpec, type SubmitFlags } from './submit-args.js';
import { parseDirectives, readJobScript, withCommandLine } from './job-script.js';
import { positiveInteger } from './numeric-flags.js';
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX } from '../api/protocol.js';
import { collect, jobId, registerJobCommands } from './job-commands.js';
import { expandForSubmit, renderOrigins, withOrigins } from './presets/expand.js';
import { registerPresets } from './presets/commands.js';

interface Globals {
  controllers?: string;
  timeout?: string;
  json?: boolean;
  stale?: boolean;
}

interface JobListFlags {
  state?: string;
  user?: string;
  app?: string;
  queue?: string;
  limit?: string;
  after?: string;
  all?: boolean;
  since?: string;
  expand?: boolean;
}

/** `jobs list` flags as the request's arguments; a bad value is a UsageError naming the flag. */
export function jobListArgs(o: JobListFlags, now_ms = Date.now()): Record<string, string | number | boolean> {
  if (o.state !== undefined && !['PEND', 'RUN', 'SUSP', 'DONE', 'EXIT'].includes(o.state))
    throw new UsageError(`--state ${o.state}: use PEND, RUN, SUSP, DONE or EXIT`);
  const out: Record<string, string | number | boolean> = {};
  for (const k of ['state', 'user', 'app', 'queue'] as const) if (o[k] !== undefined) out[k] = o[k];
  if (o.all === true) out['all'] = true;
  if (o.expand === true) out['expand'] = true;
  if (o.since !== undefined) out['sinceMs'] = parseWhen('--since', o.since, now_ms);
  if (o.limit !== undefined) out['limit'] = positiveInteger('--limit', o.limit, LIST_LIMIT_MAX);
  if (o.after !== undefined) out['after'] = positiveInteger('--after', o.after);
  return out;
}

async function readPassword(prompt: string, fromStdin: boolean): Promise<string> {
  const stdin = process.stdin;
  if (fromStdin || !stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const c of stdin) chunks.push(c as Buffer);
    return Buffer.concat(chunks)
      .toString('utf8')
      .replace(/\r?\n$/, '');
  }
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.resume();
  return new Promise((resolve, reject) => {
    let pw = '';
    const onData = (d: Buffer) => {
      for (const ch of d.toString('utf8')) {
        if (ch === '\r' || ch === '\n') {
          stdin.setRawMode(false);
          stdin.pause();
          stdin.off('data', onData);
          process.stderr.write('\n');
          resolve(pw);
          return;
        }
        if (ch === '\u0003') {
          stdin.setRawMode(false);
          reject(new UsageError('interrupted'));
          return;
        }
        if (ch === '\u007f') pw = pw.slice(0, -1);
        else pw += ch;
      }
    };
    stdin.on('data', onData);
  });
}

/** The words `parse` was given: commander sets them (`rawArgs`) without declaring them in its types. */
function rawArgs(program: Command): readonly string[] {
  return (program as unknown as { rawArgs?: string[] }).rawArgs ?? [];
}

export function cliProgram(out: { code: number }): Command {
  const program = new Command('xcecli')
    .description('XCE user command line: submit and watch jobs, list application profiles')
    .option(
      '--controllers <list>',
      'controller addresses host:port[,host:port...] (else XCE_CONTROLLERS, else the config file)',
    )
    .option('--json', 'print machine-readable JSON')
    .option('--stale', 'allow a possibly stale read from the nearest controller (faster; not linearizable)')
    .addOption(timeoutOption())
    .showHelpAfterError()
    .exitOverride();

  const run = (fn: (c: XceClient, g: Globals, color: boolean) => Promise<void>) => async () => {
    const g = program.opts<Globals>();
    await withClient(
      'xcecli',
      g,
      (c) => fn(c, g, useColor()),
      (code) => void (out.code = code),
    );
  };
  const print = (g: Globals, result: unknown, human: () => string): void => {
    process.stdout.write(g.json ? `${JSON.stringify(result)}\n` : human());
  };

  program
    .command('login')
    .description('log in and store a token (mode 0600) in your config directory')
    .option('-u, --user <name>', 'user name', process.env['USER'])
    .option('--password-stdin', 'read the password from standard input')
    .action(async (o: { user?: string; passwordStdin?: boolean }) =>
      run(async (c, g) => {
        if (!o.user) throw new UsageError('no user name: give --user');
        const password = await readPassword(`password for ${o.user}: `, o.passwordStdin === true);
        const token = await c.login(o.user, password);
        const file = saveToken(token);
        print(g, { user: o.user, tokenFile: file }, () => `Logged in as ${o.user}; token stored in ${file}\n`);
      })(),
    );

  const jobs = program.command('jobs').description('submit, list, show and control jobs');
  jobs
    .command('submit')
    .description(
      'submit a job: xcecli jobs submit [--preset NAME] [--app NAME] [-n N] [-R RESREQ] ... -- COMMAND [ARGS...], ' +
        'or a job script: xcecli jobs submit [OPTIONS] job.sh [ARGS...] (or < job.sh), whose #XCE lines (these options) ' +
        'and #BSUB lines (-J -n -q -R -o -e -W -app -cwd) at its top are options too; the command line wins',
    )
    .option('-a, --app <name>', 'application profile (default: the cluster default)')
    .option('-q, --queue <name>', 'queue')
    .option(
      '-J, --name <name>',
      'job name; NAME[1-1000], NAME[1-1000:10], NAME[1,5,9-12] make a job array (elements ID[INDEX], XCE_ARRAY_INDEX), %N after it runs at most N at once',
    )
    .option(
      '-w, --dependency <expr>',
      'run only once this holds: done(ID|NAME), exit(...), ended(...), started(...) with &&, ||, !, ( ); ID[INDEX] and NAME[*] for arrays',
    )
    .option('--dep-never <action>', 'when the dependency can never be met: pend (default; the reason says so) or kill')
    .option('-n, --tasks <n>', "number of tasks (within the profile's range)")
    .option('-R, --resreq <resreq>', 'resource requirement to ADD to the profile\'s, e.g. "select[mem>64000]"')
    .option('-e, --env <NAME=VALUE>', 'environment variable for the job (repeatable)', collect)
    .option('-l, --limit <name=value>', 'lower limit: runtime=1h, memory=4G, cpu=2h, tasks=N (repeatable)', collect)
    .option('--pre-exec <cmd>', "the job's own pre-exec (if the profile allows it)")
    .option('--post-exec <cmd>', "the job's own post-exec (if the profile allows it)")
    .option('--cwd <dir>', 'working directory (default: the current one)')
    .option('-o, --output <file>', 'stdout file (%J: the job id, %I: the array index)')
    .option('--error <file>', 'stderr file (%J, %I as for -o)')
    .option(
      '--preset <name>',
      'expand a preset: the site preset NAME, then yours of the same name (repeatable; later ones win, the command line wins over all)',
      collect,
    )
    .option('--dry-run', 'show the effective values (profile + job, with origins) without submitting')
    .argument('[command...]', 'the command, after --; or a job script and its arguments (without --)')
    .action(async (command: string[], cl: SubmitFlags & { dryRun?: boolean; preset?: string[] }) =>
      run(async (c, g) => {
        // Without `--`, the first word is a job script (read here, stored with the job); with no word, one on stdin.
        const script = await readJobScript(rawArgs(program).includes('--') ? null : command);
        const o = script === null ? cl : withCommandLine(parseDirectives(script.text, script.name).flags, cl);
        const words = script === null ? command : [script.name, ...command.slice(1)];
        const spec = buildJobSpec(o, words, process.cwd());
        const x = await expandForSubmit(c, o.preset ?? [], script === null ? spec : { ...spec, script: script.text });
        const r = (await c.submit(x.spec, o.dryRun === true)) as Record<string, unknown>;
        print(g, withOrigins(r, x), () => (o.dryRun ? renderDryRun(r) + renderOrigins(x) : renderSubmitted(r)));
      })(),
    );
  jobs
    .command('list')
    .description('list jobs, newest first, a page at a time (the footer and --json `next` give the next page)')
    .option('-s, --state <state>', 'PEND, RUN, SUSP, DONE or EXIT')
    .option('-u, --user <user>', "only this user's jobs")
    .option('-a, --app <name>', 'only jobs of this profile')
    .option('-q, --queue <name>', 'only jobs of this queue')
    .option('--limit <n>', `at most this many jobs (default ${LIST_LIMIT_DEFAULT}, at most ${LIST_LIMIT_MAX})`)
    .option('--after <id>', 'only the jobs listed after job ID: the next page (the footer says which ID)')
    .option('--expand', 'every element of a job array on its own row (else one row per array, with counts by state)')
    .option('--all', "also the jobs that left the controllers' state (from the accounting store)")
    .option(
      '--since <when>',
      'only jobs submitted or ended since: a date, a date-time or a duration ago (7d); implies --all',
    )
    .action(async (o: JobListFlags) =>
      run(async (c, g, color) => {
        const filter = jobListArgs(o);
        const r = (await c.call('jobs.list', filter, { stale: g.stale === true })) as Record<string, unknown>;
        print(g, r, () => renderJobList(r, color));
      })(),
    );
  jobs
    .command('show')
    .description(
      'job details: profile (recorded and resolved), hash, mode, effective resreq with origins, frozen record, pend reason',
    )
    .argument('<id>', 'job id')
    .action(async (id: string) =>
      run(async (c, g, color) => {
        const n = jobId(id);
        const r = await c.call('jobs.show', { id: n }, { stale: g.stale === true });
        const note = historyNote({ ...r });
        print(g, r, () => (note === null ? '' : `${note}\n`) + renderJobDetails({ ...r }, color));
      })(),
    );
  jobs
    .command('history')
    .description(
      "a job's events with their times (submitted, dispatched to hosts, started, finished), active or from history",
    )
    .argument('<id>', 'job id')
    .action(async (id: string) =>
      run(async (c, g) => {
        const n = jobId(id);
        const r = await c.call('jobs.history', { id: n }, { stale: g.stale === true });
        print(g, r, () => renderJobHistory({ ...r }));
      })(),
    );
  jobs
    .command('watch')
    .description('follow a job until it is DONE or EXIT (exit status 0 for DONE, 1 for EXIT)')
    .argument('<id>', 'job id')
    .action(async (id: string) =>
      run(async (c, g) => {
        const n = jobId(id);
        const it = c.watch(n);
        let r = await it.next();
        while (!r.done) {
          const d = r.value;
          print(g, d, () => renderWatchLine(n, d, new Date().toISOString().slice(11, 19), false));
          r = await it.next();
        }
        const d = r.value;
        print(g, d, () => renderWatchLine(n, d, new Date().toISOString().slice(11, 19), true));
        if (d['state'] === 'EXIT') out.code = EXIT.refused;
      })(),
    );
  registerJobCommands(jobs, run, print, (code) => {
    out.code = code;
  });

  const queues = program
    .command('queues')
    .description('queues (like bqueues): priority, pending and running jobs, whether you may submit, deprecations');
  queues
    .command('list', { isDefault: true })
    .description('every queue, highest priority first')
    .action(async () =>
      run(async (c, g, color) => {
        const r = (await c.call('queues.list', {}, { stale: g.stale === true })) as Record<string, unknown>;
        print(g, r, () => renderQueueList(r, color));
      })(),
    );
  queues
    .command('show')
    .description('one queue: priority, jobs by state, slots used, limits, deprecated settings')
    .argument('<name>', 'queue name')
    .action(async (name: string) =>
      run(async (c, g) => {
        const r = (await c.call('queues.show', { name }, { stale: g.stale === true })) as Record<string, unknown>;
        print(g, r, () => renderQueue(r));
      })(),
    );

  program
    .command('hosts')
    .description(
      'hosts of hosts.yaml (like bhosts): status, the slots the scheduler uses and hold, and where a worker registers other resources than hosts.yaml allows',
    )
    .action(async () =>
      run(async (c, g, color) => {
        const r = (await c.call('hosts.list', {}, { stale: g.stale === true })) as Record<string, unknown>;
        print(g, r, () => renderHostList(r, color));
      })(),
    );

  const apps = program.command('apps').description('application profiles');
  apps
    .command('list')
    .description('profiles you may see, with their version hash and whether you may use them')
    .action(async () =>
      run(async (c, g, color) => {
        const r = (await c.call('apps.list', {}, { stale: g.stale === true })) as Record<string, unknown>;
        print(g, r, () => renderAppList(r, color));
      })(),
    );
  apps
    .command('show')
    .description('one profile: its essentials, limits, env, pre/post-exec')
    .argument('<name>', 'profile name or alias')
    .action(async (name: string) =>
      run(async (c, g, color) => {
        const r = (await c.call('apps.show', { name }, { stale: g.stale === true })) as Record<string, unknown>;
        print(g, r, () => renderApp(r, color));
      })(),
    );
  registerPresets(program, run, print, (code) => {
    out.code = code;
  });
  return program;
}

export async function runCli(argv: readonly string[]): Promise<number> {
  const out = { code: EXIT.ok as number };
  try {
    await cliProgram(out).parseAsync([...argv]);
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    throw e;
  }
  return out.code;
}
