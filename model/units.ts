// Durations and sizes as admins write them in applications.yaml and users on `--limit`:
// `24h`, `90m`, `30s`, `1h30m`, `2d` (seconds) and `128G`, `512M`, `4096K`, `1T`, plain bytes (binary
// units: K = 1024). Formatting goes back to the largest unit that is exact, so an error message shows a
// value as the admin wrote it (`24h`, `128G`), not as a count of seconds or bytes.

export class UnitSyntaxError extends Error {
  override readonly name = 'UnitSyntaxError';
  constructor(
    readonly kind: 'duration' | 'size',
    readonly input: string,
    message: string,
  ) {
    super(message);
  }
}

const DURATION_UNITS_S: ReadonlyArray<readonly [string, number]> = [
  ['d', 86_400],
  ['h', 3_600],
  ['m', 60],
  ['s', 1],
];

const SIZE_UNITS_BYTES: ReadonlyArray<readonly [string, number]> = [
  ['P', 1024 ** 5],
  ['T', 1024 ** 4],
  ['G', 1024 ** 3],
  ['M', 1024 ** 2],
  ['K', 1024],
];

const DURATION_PART = /(\d+)([dhms])/y;

/**
 * `1h30m` → 5400. Units d, h, m, s, each at most once and largest first; a bare integer is seconds.
 * Throws UnitSyntaxError naming what was expected.
 */
export function parseDuration(text: string): number {
  const s = text.trim();
  if (/^\d+$/.test(s)) return checkedInteger('duration', text, Number(s));
  if (s.length === 0)
    throw new UnitSyntaxError('duration', text, `empty duration: expected e.g. 24h, 90m, 30s or 1h30m`);
  let pos = 0;
  let total = 0;
  let lastRank = -1;
  DURATION_PART.lastIndex = 0;
  while (pos < s.length) {
    DURATION_PART.lastIndex = pos;
    const m = DURATION_PART.exec(s);
    if (m === null) {
      throw new UnitSyntaxError(
        'duration',
        text,
        `bad duration "${text}": expected digits followed by d, h, m or s (e.g. 24h, 90m, 1h30m)`,
      );
    }
    const unit = m[2] as string;
    const rank = DURATION_UNITS_S.findIndex(([u]) => u === unit);
    if (rank <= lastRank) {
      throw new UnitSyntaxError(
        'duration',
        text,
        `bad duration "${text}": units must appear once each, largest first (d, h, m, s)`,
      );
    }
    lastRank = rank;
    total += Number(m[1]) * (DURATION_UNITS_S[rank] as readonly [string, number])[1];
    pos = DURATION_PART.lastIndex;
  }
  return checkedInteger('duration', text, total);
}

/**
 * 86400 → `24h`, 5400 → `90m`, 90 → `90s`: the largest single unit that divides the value. Hours are
 * the largest unit written back (as admins write limits: `24h`, `72h`), though `2d` is read.
 */
export function formatDuration(seconds: number): string {
  assertNonNegativeInteger(seconds, 'duration');
  if (seconds === 0) return '0s';
  for (const [unit, factor] of DURATION_UNITS_S) {
    if (unit === 'd') continue;
    if (seconds % factor === 0) return `${seconds / factor}${unit}`;
  }
  return `${seconds}s`; // unreachable: factor 1 always divides
}

const SIZE_FORM = /^(\d+)([KMGTP]?)(i?B)?$/;

/** `128G` → 137438953472 (binary units, K = 1024; `128GiB` and `128GB` are read the same); plain digits are bytes. */
export function parseSize(text: string): number {
  const s = text.trim();
  const m = SIZE_FORM.exec(s);
  if (m === null) {
    throw new UnitSyntaxError(
      'size',
      text,
      `bad size "${text}": expected digits with an optional unit K, M, G, T or P (binary: 1K = 1024 bytes), e.g. 128G`,
    );
  }
  const unit = m[2] as string;
  const factor = unit === '' ? 1 : (SIZE_UNITS_BYTES.find(([u]) => u === unit) as readonly [string, number])[1];
  return checkedInteger('size', text, Number(m[1]) * factor);
}

/** 137438953472 → `128G`, 4096 → `4K`, 1536 → `1536` (1.5K is not a whole unit, so plain bytes). */
export function formatSize(bytes: number): string {
  assertNonNegativeInteger(bytes, 'size');
  if (bytes === 0) return '0';
  for (const [unit, factor] of SIZE_UNITS_BYTES) {
    if (bytes % factor === 0) return `${bytes / factor}${unit}`;
  }
  return String(bytes);
}

function checkedInteger(kind: 'duration' | 'size', text: string, value: number): number {
  if (!Number.isSafeInteger(value)) {
    throw new UnitSyntaxError(kind, text, `${kind} "${text}" is too large`);
  }
  return value;
}

function assertNonNegativeInteger(value: number, what: string): void {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new RangeError(`${what} must be a non-negative safe integer, got ${value}`);
}
