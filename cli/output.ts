// Output for humans (tables, colour only on a terminal and never under NO_COLOR) and for
// scripts (`--json`), and the exit codes scripts can rely on.

import { ApiError } from './client.js';
import { SettingsError } from './settings.js';

export const EXIT = {
  ok: 0,
  /** The request was understood and refused: rejected, not found, forbidden by RBAC. */
  refused: 1,
  /** Bad command line. */
  usage: 2,
  /** Not logged in, or the token expired or is not valid. */
  auth: 3,
  /** No controller answered, or the cluster has no leader. */
  unavailable: 4,
  internal: 5,
} as const;

export function useColor(stream: NodeJS.WriteStream = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && env['NO_COLOR'] === undefined && env['TERM'] !== 'dumb';
}

export function bold(text: string, color: boolean): string {
  return color ? `\x1b[1m${text}\x1b[0m` : text;
}

/** A plain left-aligned table; the header is bold on a colour terminal. */
export function table(header: readonly string[], rows: readonly (readonly string[])[], color = false): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [bold(line(header), color), ...rows.map(line)].join('\n') + '\n';
}

export function exitCodeFor(err: unknown): number {
  if (err instanceof SettingsError) return EXIT.usage;
  if (!(err instanceof ApiError)) return EXIT.internal;
  switch (err.code) {
    case 'rejected':
    case 'not-found':
    case 'forbidden':
      return EXIT.refused;
    case 'bad-request':
    case 'bad-frame':
    case 'unknown-op':
      return EXIT.usage;
    case 'unauthenticated':
      return EXIT.auth;
    case 'unreachable':
    case 'timeout':
    case 'no-leader':
    case 'not-leader':
    case 'unavailable':
    case 'rate-limited':
      return EXIT.unavailable;
    default:
      return EXIT.internal;
  }
}

/** Prints an error as one clear line (or a JSON object with --json) and returns the exit code. */
export function reportError(prog: string, err: unknown, json: boolean): number {
  const code = exitCodeFor(err);
  const kind = err instanceof ApiError ? err.code : err instanceof SettingsError ? 'settings' : 'internal';
  const message = err instanceof Error ? err.message : String(err);
  if (json) process.stdout.write(`${JSON.stringify({ ok: false, error: { code: kind, message } })}\n`);
  else process.stderr.write(`${prog}: ${printableMessage(message)}\n`);
  return code;
}

/**
 * An error message for a terminal: it may quote values from the cluster (a profile or job name, a
 * job's own values, a reason quoting a job's output), so control characters are shown, not obeyed
 * (`printable`). Its own line breaks (a configuration's list of problems) are kept, each following
 * line indented, so a value cannot fake a line of its own.
 */
export function printableMessage(message: string): string {
  return message.split('\n').map(printable).join('\n  ');
}

/**
 * Text from the cluster (other users' job names, commands, failure reasons quoting a job's output)
 * made safe to print on a terminal: every control character is shown instead of obeyed. ESC as
 * `\e`, `\n` `\r` `\t` as themselves, other C0 and DEL as `\xHH`, C1 (U+0080..U+009F, which
 * some terminals obey as 8-bit ESC sequences) as `\u00HH`. `--json` output is not passed through
 * this: JSON escapes them itself and stays exact.
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f\u0080-\u009f]/g, (c) => {
    const code = c.charCodeAt(0);
    if (c === '\x1b') return '\\e';
    if (c === '\n') return '\\n';
    if (c === '\r') return '\\r';
    if (c === '\t') return '\\t';
    const hex = code.toString(16).padStart(2, '0');
    return code >= 0x80 ? `\\u00${hex}` : `\\x${hex}`;
  });
}
