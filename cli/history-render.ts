// Output of the history commands: `xcecli jobs history` (a job's events, like bhist), the note
// `jobs show` adds for a job from history, `xceadmin accounting report` as a table or CSV, and the
// times these commands take (`--since 2026-01-31`, `--since 7d` for seven days ago).

import { printable, table } from './output.js';
import { UsageError } from './submit-args.js';

type Obj = Record<string, unknown>;

const DURATION_AGO = /^(\d+d)?(\d+h)?(\d+m)?(\d+s)?$/;
const UNIT_MS: Record<string, number> = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 };

/** `--since`/`--until`: an ISO date or date-time (UTC unless it says otherwise), or a duration ago (`7d`, `90m`, `1h30m`). */
export function parseWhen(option: string, text: string, nowMs: number): number {
  const t = text.trim();
  if (t.length > 0 && DURATION_AGO.test(t)) {
    let ms = 0;
    for (const m of t.matchAll(/(\d+)([dhms])/g)) ms += Number(m[1]) * UNIT_MS[m[2]!]!;
    return nowMs - ms;
  }
  const ms = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(t) ? `${t}T00:00:00Z` : t);
  if (!Number.isFinite(ms))
    throw new UsageError(
      `${option} ${JSON.stringify(text)}: expected a date (2026-01-31), a date-time (2026-01-31T08:00:00Z) or a duration ago (7d, 12h, 90m)`,
    );
  return ms;
}

const when = (ms: unknown): string => (typeof ms === 'number' ? new Date(ms).toISOString().replace('.000Z', 'Z') : '-');

export function renderJobHistory(h: Obj): string {
  const events = (h['events'] as Obj[]) ?? [];
  const from = h['source'] === 'history' ? " (from history: the job left the controllers' state)" : '';
  const rows = events.map((e) => [when(e['timeMs']), printable(String(e['event'])), printable(String(e['detail']))]);
  return `Job ${String(h['jobId'])}, user ${printable(String(h['user']))}${from}\n${table(['TIME', 'EVENT', 'DETAIL'], rows)}`;
}

/** The line `jobs show` adds for a job read from the accounting store. */
export function historyNote(j: Obj): string | null {
  const h = j['history'] as Obj | undefined;
  if (h === undefined) return null;
  return `From history: the job left the controllers' state at ${when(h['cleanedTimeMs'])} (log index ${String(h['cleanedAtIndex'])})`;
}

const REPORT_HEADER = ['KEY', 'JOBS', 'DONE', 'EXIT', 'CPU_HOURS', 'WALL_HOURS'];

function reportRows(r: Obj): string[][] {
  return ((r['rows'] as Obj[]) ?? []).map((x) => [
    String(x['key']),
    String(x['jobs']),
    String(x['done']),
    String(x['exit']),
    Number(x['cpuHours']).toFixed(3),
    Number(x['wallHours']).toFixed(3),
  ]);
}

export function renderReport(r: Obj): string {
  const by = r['by'] === null ? 'all jobs' : `by ${String(r['by'])}`;
  const head = `Jobs that ended from ${when(r['sinceMs'])} until ${when(r['untilMs'])}, ${by}\n`;
  const rows = reportRows(r);
  return rows.length === 0
    ? `${head}(no jobs)\n`
    : head +
        table(
          REPORT_HEADER,
          rows.map((x) => x.map(printable)),
        );
}

/** RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled. */
export function renderReportCsv(r: Obj): string {
  const field = (s: string): string => (/[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
  const lines = [REPORT_HEADER.map((h) => h.toLowerCase()), ...reportRows(r)].map((row) => row.map(field).join(','));
  return `${lines.join('\r\n')}\r\n`;
}
