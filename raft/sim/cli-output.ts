// What the simulators' command lines share (this one's, raft/sim/cli.ts, and the whole-controller
// one's, testing/sim/cli.ts): a seed count read from the command line, a failing seed's trace, and
// an exit that lets a piped trace be written out first. Pure apart from stdout and the exit.

/**
 * `raw` as a non-negative whole number for `--name` (`fallback` when not given); anything else is
 * `fail`ed, naming the option and the value.
 */
export function nonNegative(
  fail: (message: string) => never,
  name: string,
  raw: string | undefined,
  fallback: number,
): number {
  if (raw === undefined) return fallback;
  const n = raw.trim() === '' ? NaN : Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) fail(`--${name} needs a non-negative integer, got '${raw}'`);
  return n;
}

/** Prints a seed's trace: all of it, or its last `maxLines` lines with a note of how to replay it whole. */
export function reportTrace(
  res: { seed: number; trace: readonly string[] },
  allLines: boolean,
  maxLines: number,
): void {
  const lines = allLines ? res.trace : res.trace.slice(-maxLines);
  if (!allLines && res.trace.length > lines.length)
    process.stdout.write(
      `... (${res.trace.length - lines.length} earlier trace lines omitted; replay with --seed ${res.seed} --trace)\n`,
    );
  process.stdout.write(lines.join('\n') + '\n');
}

/** Exits with `code` once everything written to stdout has been handed to the OS (a piped trace is
 * never cut short, as `process.exit` right after a write would cut it). */
export function exitAfterOutput(code: number): void {
  process.exitCode = code;
  process.stdout.write('', () => process.exit(code));
}
