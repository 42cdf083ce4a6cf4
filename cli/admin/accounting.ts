// `xceadmin accounting report --since WHEN [--until WHEN] [--by user|app|queue] [--json | --csv]`:
// job counts, CPU·hours (tasks × wall time) and wall·hours of the jobs that ended in the range,
// from the controller's accounting store (like bacct / sreport). Needs job:view.

import type { Command } from 'commander';
import { withClient } from '../connect.js';
import { parseWhen, renderReport, renderReportCsv } from '../history-render.js';
import { UsageError } from '../submit-args.js';

interface ReportFlags {
  since: string;
  until?: string;
  by?: string;
  json?: boolean;
  csv?: boolean;
  controllers?: string;
  timeout?: string;
}

export function registerAccounting(program: Command): void {
  const acct = program.command('accounting').description('the history of finished jobs that left the state');
  acct
    .command('report')
    .description(
      'job counts, CPU·hours and wall·hours of the jobs that ended in [--since, --until), per user, app or queue',
    )
    .requiredOption('--since <when>', 'a date (2026-01-31), a date-time, or a duration ago (7d, 12h)')
    .option('--until <when>', 'the end of the range (default: now)')
    .option('--by <key>', 'user, app or queue (default: one row for all jobs)')
    .option('--csv', 'CSV output (RFC 4180)')
    .option('--json', 'machine-readable output')
    .option('--controllers <list>', 'controller addresses')
    .action(async function (this: Command) {
      const o = this.optsWithGlobals<ReportFlags>();
      const json = o.json === true;
      // The client of every command (connect.ts): the controllers' CA, the token, the call deadline.
      await withClient(
        'xceadmin',
        o,
        async (c) => {
          const nowMs = Date.now();
          if (o.by !== undefined && !['user', 'app', 'queue'].includes(o.by))
            throw new UsageError(`--by ${o.by}: use user, app or queue`);
          if (o.csv === true && json) throw new UsageError('--csv and --json: choose one');
          const args = {
            sinceMs: parseWhen('--since', o.since, nowMs),
            untilMs: o.until === undefined ? nowMs : parseWhen('--until', o.until, nowMs),
            ...(o.by !== undefined ? { by: o.by as 'user' | 'app' | 'queue' } : {}),
          };
          const r = (await c.call('accounting.report', args)) as Record<string, unknown>;
          process.stdout.write(json ? `${JSON.stringify(r)}\n` : o.csv === true ? renderReportCsv(r) : renderReport(r));
        },
        (code) => (process.exitCode = code),
      );
    });
}
