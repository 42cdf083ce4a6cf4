// The rusage, span, same and order sections of a resource requirement: rusage items with their
// amounts (amount.ts) and durations (a bare number is minutes, as in LSF), span[ptile=N:hosts=N],
// same[attr:...] and order[[-|+]key:...].

import { amountProblem } from './amount.js';
import { UINT32_MAX } from './field-ranges.js';
import type { OrderKey, RusageItem, Span } from './profile-types.js';
import { isIdentPart, type ResReqScanner } from './resreq-scanner.js';
import { parseDuration, UnitSyntaxError } from './units.js';

export function rusageBody(scan: ResReqScanner): readonly RusageItem[] {
  const items: RusageItem[] = [];
  for (;;) {
    scan.ws();
    if (scan.peek() === 93 && items.length === 0)
      scan.fail(`rusage[] is empty: give at least one item, e.g. rusage[mem=4000]`);
    const at = scan.pos;
    const name = scan.ident('a resource name');
    if (name === 'duration') scan.fail(`duration must follow an item, as in rusage[mem=4000:duration=30m]`, at);
    if (items.some((i) => i.name === name)) scan.fail(`rusage names ${name} twice`, at);
    scan.expect('=', `"=" after ${name}`);
    scan.ws();
    const vAt = scan.pos;
    const value = scan.numberToken();
    if (value === null) scan.fail(`expected a number for ${name}`);
    if (value < 0) scan.fail(`rusage value of ${name} must not be negative`, vAt);
    const amount = amountProblem(value);
    if (amount !== null) scan.fail(`rusage value of ${name}: ${amount}`, vAt);
    let item: RusageItem = { name, value };
    scan.ws();
    // `:duration=` belongs to the item before it; any other `:` or `,` starts the next item.
    if (scan.peek() === 58 /* : */) {
      const save = scan.pos;
      scan.pos++;
      scan.ws();
      if (scan.s.startsWith('duration', scan.pos) && !isIdentPart(scan.s.charCodeAt(scan.pos + 8))) {
        scan.pos += 8;
        scan.expect('=', '"=" after duration');
        scan.ws();
        item = { name, value, duration_s: duration(scan) };
        scan.ws();
      } else {
        scan.pos = save;
      }
    }
    items.push(item);
    const c = scan.peek();
    if (c === 44 || c === 58) {
      scan.pos++;
      continue;
    }
    return items;
  }
}

function duration(scan: ResReqScanner): number {
  const s = scan.s;
  const start = scan.pos;
  let p = start;
  while (p < s.length && isIdentPart(s.charCodeAt(p))) p++;
  const text = s.slice(start, p);
  if (text.length === 0) scan.fail(`expected a duration such as 30m or 1h`);
  scan.pos = p;
  if (/^\d+$/.test(text)) {
    const seconds = Number(text) * 60; // LSF: a bare duration is minutes
    if (!Number.isSafeInteger(seconds)) scan.fail(`duration ${text} (minutes) is too large`, start);
    return seconds;
  }
  try {
    return parseDuration(text);
  } catch (err) {
    if (err instanceof UnitSyntaxError) scan.fail(err.message, start);
    throw err;
  }
}

export function spanBody(scan: ResReqScanner): Span {
  let ptile: number | undefined;
  let hosts: number | undefined;
  for (;;) {
    scan.ws();
    const at = scan.pos;
    const key = scan.ident('ptile or hosts');
    if (key !== 'ptile' && key !== 'hosts') scan.fail(`span supports ptile and hosts, not ${key}`, at);
    if ((key === 'ptile' ? ptile : hosts) !== undefined) scan.fail(`span sets ${key} twice`, at);
    scan.expect('=', `"=" after ${key}`);
    scan.ws();
    const vAt = scan.pos;
    const v = scan.numberToken();
    // Stored as a UInt32 (Span.ptile / Span.hosts in schema/profile.capnp and schema/facts.capnp).
    if (v === null || !Number.isInteger(v) || v < 1 || v > UINT32_MAX)
      scan.fail(`span ${key} must be a whole number from 1 to ${UINT32_MAX}${v === null ? '' : `, not ${v}`}`, vAt);
    if (key === 'ptile') ptile = v;
    else hosts = v;
    scan.ws();
    const c = scan.peek();
    if (c === 44 || c === 58) {
      scan.pos++;
      continue;
    }
    break;
  }
  if (ptile !== undefined && hosts !== undefined) return { ptile, hosts };
  return ptile !== undefined ? { ptile } : { hosts: hosts as number };
}

export function nameList(scan: ResReqScanner, section: string, what: string): readonly string[] {
  return items(
    scan,
    section,
    (n) => n,
    () => scan.ident(what),
  );
}

export function orderBody(scan: ResReqScanner): readonly OrderKey[] {
  return items(
    scan,
    'order',
    (k) => k.name,
    () => {
      let descending = false;
      const c = scan.peek();
      if (c === 45 || c === 43) {
        descending = c === 45;
        scan.pos++;
      }
      return { name: scan.ident('a resource name to order by'), descending };
    },
  );
}

/** Items separated by `,` or `:`, each named once (`section names X twice` at the second). */
function items<T>(scan: ResReqScanner, section: string, nameOf: (item: T) => string, item: () => T): T[] {
  const out: T[] = [];
  for (;;) {
    scan.ws();
    const at = scan.pos;
    const x = item();
    const name = nameOf(x);
    if (out.some((y) => nameOf(y) === name)) scan.fail(`${section} names ${name} twice`, at);
    out.push(x);
    scan.ws();
    const c = scan.peek();
    if (c === 44 || c === 58) {
      scan.pos++;
      continue;
    }
    return out;
  }
}
