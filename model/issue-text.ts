// A zod issue as a sentence a person can act on: the value that is wrong and what is allowed
// (`0 is too small: at least 1`, `"sandbox" is not allowed: expected "direct"`), never zod's own
// wording (`Too small: expected number to be >=1`). Configuration files (config-file.ts) and client
// requests (api/protocol.ts) are reported through it; parse with `{ reportInput: true }` so that
// each issue carries the value. A schema's own message (a custom `error`) is kept, with the value
// in front.

import type { z } from 'zod';

const VALUE_CHARS_MAX = 40;

/** A value as a message quotes it: strings quoted (and cut), numbers as written, others by kind. */
export function quoteValue(v: unknown): string {
  if (typeof v === 'string') {
    return JSON.stringify(v.length > VALUE_CHARS_MAX ? `${v.slice(0, VALUE_CHARS_MAX)}…` : v);
  }
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (v === null) return 'null';
  if (Array.isArray(v)) return `a list of ${v.length}`;
  return typeof v === 'object' ? 'a map' : String(v);
}

function kindOf(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a map';
  if (typeof v === 'string') return `the text ${quoteValue(v)}`;
  if (typeof v === 'number') return `the number ${v}`;
  if (typeof v === 'boolean') return `${v}`;
  return typeof v;
}

const ZOD_DEFAULT = /^(Too small|Too big|Invalid|Expected|Unrecognized)/;

function bound(issue: { readonly origin?: string; readonly inclusive?: boolean }, n: unknown, small: boolean): string {
  const origin = issue.origin ?? 'number';
  const unit = origin === 'string' ? ' characters' : origin === 'array' || origin === 'set' ? ' items' : '';
  const exclusive = issue.inclusive === false;
  return small
    ? exclusive
      ? `more than ${String(n)}${unit}`
      : `at least ${String(n)}${unit}`
    : exclusive
      ? `less than ${String(n)}${unit}`
      : `at most ${String(n)}${unit}`;
}

function sized(v: unknown, origin: string | undefined): string {
  if (origin === 'string' && typeof v === 'string') return `${quoteValue(v)} (${v.length} characters)`;
  if ((origin === 'array' || origin === 'set') && Array.isArray(v)) return `${v.length} items`;
  return quoteValue(v);
}

/** The issue's sentence, without its path (the caller puts the field in front). */
export function issueText(issue: z.core.$ZodIssue): string {
  const has = 'input' in issue && issue.input !== undefined;
  const v = has ? issue.input : undefined;
  const custom = !ZOD_DEFAULT.test(issue.message);
  // A schema's own message is kept; the value goes in front unless the message names it already.
  if (custom) {
    const named = typeof v === 'string' || typeof v === 'number' ? issue.message.includes(String(v)) : true;
    // A refinement (code custom) says what is wrong with the value in its own words.
    return has && !named && issue.code !== 'custom' ? `${quoteValue(v)}: ${issue.message}` : issue.message;
  }
  switch (issue.code) {
    case 'too_small':
      return `${has ? sized(v, issue.origin) : 'the value'} is too ${issue.origin === 'string' || issue.origin === 'array' ? 'short' : 'small'}: ${bound(issue, issue.minimum, true)}`;
    case 'too_big':
      return `${has ? sized(v, issue.origin) : 'the value'} is too ${issue.origin === 'string' || issue.origin === 'array' ? 'long' : 'large'}: ${bound(issue, issue.maximum, false)}`;
    case 'invalid_type':
      return `expected ${article(issue.expected)}, not ${kindOf(v)}`;
    case 'invalid_value': {
      const allowed = issue.values.map((x) => quoteValue(x));
      const what = allowed.length === 1 ? allowed[0] : `one of ${allowed.join(', ')}`;
      return has ? `${quoteValue(v)} is not allowed: expected ${what}` : `expected ${what}`;
    }
    case 'invalid_format':
      return has ? `${quoteValue(v)} is not ${article(issue.format)}` : `expected ${article(issue.format)}`;
    case 'unrecognized_keys':
      return `unknown key${issue.keys.length === 1 ? '' : 's'} ${issue.keys.map((k) => quoteValue(k)).join(', ')}`;
    case 'invalid_union':
      return has ? `${quoteValue(v)} is none of the forms allowed here` : 'none of the forms allowed here';
    case 'not_multiple_of':
      return `${has ? quoteValue(v) : 'the value'} is not a multiple of ${String(issue.divisor)}`;
    default:
      return has ? `${quoteValue(v)} is not allowed here` : issue.message.replace(/^Invalid input: /, '');
  }
}

function article(what: string): string {
  const word = what === 'int' ? 'whole number' : what === 'object' ? 'map' : what === 'array' ? 'list' : what;
  return /^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`;
}
