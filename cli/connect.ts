// The client of a command-line tool (xcecli, xceadmin): its controllers and token (settings.ts),
// its deadline (`--timeout`, a global option of both tools), and a line on stderr when no
// controller has answered for a while, naming the addresses it is trying.

import { Option } from 'commander';
import { CALL_DEADLINE_MS_DEFAULT, type Stall, XceClient } from './client.js';
import { UsageError } from './numeric-flags.js';
import { EXIT, printableMessage, reportError } from './output.js';
import { readToken, resolveControllers, SettingsError } from './settings.js';

export const TIMEOUT_S_DEFAULT = CALL_DEADLINE_MS_DEFAULT / 1000;
/** A day: longer waits are a mistake (and beyond what a timer holds exactly). */
export const TIMEOUT_S_MAX = 86_400;

/** The global options the client is made from. */
export interface ConnectFlags {
  readonly controllers?: string;
  readonly timeout?: string;
}

/** `--timeout SECONDS`, with its default in `--help`. */
export function timeoutOption(): Option {
  return new Option(
    '--timeout <seconds>',
    `seconds to keep trying to reach the controllers before giving up (default: ${TIMEOUT_S_DEFAULT})`,
  );
}

/** The deadline in seconds `--timeout` gives (undefined: not given); throws SettingsError naming a bad value. */
export function parseTimeout_s(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const s = /^\s*[0-9]*\.?[0-9]+(e[+-]?[0-9]+)?\s*$/i.test(text) ? Number(text) : NaN;
  if (!(s > 0) || !Number.isFinite(s))
    throw new SettingsError(`--timeout must be a positive number of seconds, got ${JSON.stringify(text)}`);
  if (s > TIMEOUT_S_MAX)
    throw new SettingsError(`--timeout must be at most ${TIMEOUT_S_MAX} seconds (a day), got ${JSON.stringify(text)}`);
  return s;
}

/** What a tool prints when a call has waited without a connection. */
export function stallMessage(prog: string, stall: Stall): string {
  return (
    `${prog}: no controller has answered for ${stall.waited_ms / 1000} s; trying ${stall.addresses.join(', ')} ` +
    `(giving up after ${stall.deadline_ms / 1000} s; --timeout SECONDS changes that)\n`
  );
}

/** The client for a command of `prog`, from its global flags, the environment and the config directory. */
export function connect(
  prog: string,
  flags: ConnectFlags,
  stderr: { write(text: string): unknown } = process.stderr,
): XceClient {
  const timeout_s = parseTimeout_s(flags.timeout);
  const token = readToken();
  return new XceClient({
    controllers: resolveControllers(flags.controllers),
    ...(token ? { token } : {}),
    ...(timeout_s !== undefined ? { callDeadline_ms: Math.round(timeout_s * 1000) } : {}),
    onStall: (stall) => void stderr.write(stallMessage(prog, stall)),
  });
}

/**
 * Runs `fn` with the client for a command of `prog` and closes it after. A UsageError is printed as
 * `prog: message` with exit status EXIT.usage; any other error as reportError prints it (one line,
 * or JSON with --json) with its exit status. `setCode` is given the exit status of a failure.
 */
export async function withClient(
  prog: string,
  flags: ConnectFlags & { readonly json?: boolean },
  fn: (c: XceClient) => Promise<void>,
  setCode: (code: number) => void,
): Promise<void> {
  let c: XceClient | undefined;
  try {
    c = connect(prog, flags);
    await fn(c);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${prog}: ${printableMessage(err.message)}\n`);
      setCode(EXIT.usage);
    } else setCode(reportError(prog, err, flags.json === true));
  } finally {
    c?.close();
  }
}
