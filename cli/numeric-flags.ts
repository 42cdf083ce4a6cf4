// A bad command line (UsageError: exit status 2), and the numeric command-line values of xcecli
// and xceadmin, read one way: digits only, a safe integer, within bounds. A bad one is a
// UsageError saying what the flag expects and what it got (`--limit must be a positive integer,
// got "abc"`), never a validator's own wording.

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** `text` as a positive integer for `flag` (at most `max` when given); throws UsageError otherwise. */
export function positiveInteger(flag: string, text: string, max?: number): number {
  const n = /^[0-9]+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`${flag} must be a positive integer, got "${text}"`);
  if (max !== undefined && n > max) throw new UsageError(`${flag} must be at most ${max}, got "${text}"`);
  return n;
}
