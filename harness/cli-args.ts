// The command lines of the dev scripts (benchmarks, the simulators, the drill, `npm start`): one way
// to read them, node:util's parseArgs in strict mode. `--help` (`-h`) prints the usage and exits 0;
// an unknown option, a missing value or a bad number prints `NAME: what is wrong` (naming the
// option) and the usage on stderr and exits 2. raft/sim/cli.ts and wal/crash-test.ts, which may
// import nothing of harness/, do the same inline.

import { parseArgs, type ParseArgsConfig } from 'node:util';

/** The exit status of a command line that does not parse. */
export const EXIT_USAGE = 2;

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;
type Values<O extends OptionsConfig> = ReturnType<
  typeof parseArgs<{ options: O; strict: true; allowPositionals: false }>
>['values'];

export interface CommandLine<O extends OptionsConfig> {
  readonly values: Values<O>;
  /** Prints `name: message` and the usage on stderr, then exits 2. */
  fail(message: string): never;
  /**
   * The option's value as a whole number from `min` to `max`, or `fallback` when it was not given;
   * anything else is a usage error naming the option.
   */
  whole(option: keyof O & string, fallback: number, min?: number, max?: number): number;
  /** The option's value (else `fallback`) as positive whole numbers separated by commas (`1,16,256`). */
  wholes(option: keyof O & string, fallback: string): number[];
}

/**
 * Parses `argv` (default: this process's arguments) against `options`. `usage` is the text `--help`
 * prints and a usage error ends with: the synopsis first (`npm run x -- [--n N]`), then optionally
 * a line per option.
 */
export function parseCommandLine<const O extends OptionsConfig>(
  name: string,
  usage: string,
  options: O,
  argv: readonly string[] = process.argv.slice(2),
): CommandLine<O> {
  const fail = (message: string): never => {
    process.stderr.write(`${name}: ${message}\nusage: ${usage}\n`);
    process.exit(EXIT_USAGE);
  };
  let values: Record<string, unknown> = {};
  try {
    values = parseArgs({
      args: [...argv],
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    fail((err as Error).message);
  }
  if (values['help'] === true) {
    process.stdout.write(`usage: ${usage}\n`);
    process.exit(0);
  }
  return {
    values: values as Values<O>,
    fail,
    whole(option, fallback, min = 1, max = Number.MAX_SAFE_INTEGER) {
      const text = values[option];
      if (text === undefined) return fallback;
      const n = typeof text === 'string' && text.trim() !== '' ? Number(text) : NaN;
      if (!Number.isSafeInteger(n) || n < min || n > max) {
        const range =
          max !== Number.MAX_SAFE_INTEGER
            ? `a whole number from ${min} to ${max}`
            : min === 1
              ? 'a positive whole number'
              : `a whole number of at least ${min}`;
        fail(`--${option} must be ${range}, not "${String(text)}"`);
      }
      return n;
    },
    wholes(option, fallback) {
      const value = values[option];
      const text = typeof value === 'string' ? value : fallback;
      const ns = text.split(',').map(Number);
      if (ns.some((n) => !Number.isSafeInteger(n) || n < 1))
        fail(`--${option} takes positive whole numbers separated by commas, not "${text}"`);
      return ns;
    },
  };
}

/** `{ name: { type: 'string' }, ... }`: options that take a value (a number is read with `whole`). */
export function stringOptions<const N extends string>(...names: N[]): { [K in N]: { type: 'string' } } {
  return Object.fromEntries(names.map((n) => [n, { type: 'string' }])) as { [K in N]: { type: 'string' } };
}
