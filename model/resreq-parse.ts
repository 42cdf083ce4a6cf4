// Parsing a whole resource requirement: its sections in any order, each at most once, and the
// compound (`{...} + {...}`) and alternative (`... || ...`) forms; parseSimpleResReq refuses those.

import type { CompoundResReq, OrderKey, ParsedResReq, ResReq, RusageItem, SelectExpr, Span } from './profile-types.js';
import { isIdentStart, ResReqScanner, ResReqSyntaxError, SECTIONS, type SectionName } from './resreq-scanner.js';
import { nameList, orderBody, rusageBody, spanBody } from './resreq-sections.js';
import { selectBody } from './resreq-select.js';

/** A resource requirement longer than this is refused: it is typed by people, not generated. */
export const RESREQ_CHARS_MAX = 4096;

const EMPTY: readonly never[] = Object.freeze([]);

function parse(scan: ResReqScanner): ParsedResReq {
  if (scan.s.length > RESREQ_CHARS_MAX) {
    throw new ResReqSyntaxError(
      scan.s.slice(0, 40) + '...',
      RESREQ_CHARS_MAX + 1,
      `longer than ${RESREQ_CHARS_MAX} characters`,
    );
  }
  const first = part(scan);
  scan.ws();
  if (scan.eof()) return first;
  const parts: ResReq[] = [first];
  let operator: '+' | '||' | null = null;
  while (!scan.eof()) {
    const at = scan.pos;
    let op: '+' | '||';
    if (scan.s.startsWith('||', at)) op = '||';
    else if (scan.s.charCodeAt(at) === 43) op = '+';
    else scan.fail(`expected a section (${SECTIONS.join(', ')}), "+" or "||" but found ${scan.describeHere()}`);
    if (operator !== null && operator !== op) {
      scan.fail(`cannot mix "+" and "||" between whole requirements`, at);
    }
    operator = op;
    scan.pos += op.length;
    scan.ws();
    if (scan.eof()) scan.fail(`expected a requirement after "${op}"`);
    parts.push(part(scan));
    scan.ws();
  }
  const compound: CompoundResReq = { kind: 'compound', parts, operator: operator as '+' | '||' };
  return compound;
}

function part(scan: ResReqScanner): ResReq {
  scan.ws();
  if (scan.peek() === 123 /* { */) {
    scan.pos++;
    const r = simple(scan, true);
    scan.expect('}', '"}"');
    return r;
  }
  return simple(scan, false);
}

function simple(scan: ResReqScanner, braced: boolean): ResReq {
  let select: readonly SelectExpr[] = EMPTY;
  let rusage: readonly RusageItem[] = EMPTY;
  let span: Span | null = null;
  let same: readonly string[] | null = null;
  let order: readonly OrderKey[] | null = null;
  let seen = 0;
  for (;;) {
    scan.ws();
    const c = scan.peek();
    if (c === -1 || c === 43 /* + */ || (c === 124 && scan.s.charCodeAt(scan.pos + 1) === 124) || (braced && c === 125))
      break;
    const at = scan.pos;
    if (!isIdentStart(c)) {
      scan.fail(`expected a section (${SECTIONS.join(', ')}) but found ${scan.describeHere()}`);
    }
    const name = scan.ident('a section name');
    const idx = (SECTIONS as readonly string[]).indexOf(name);
    if (idx < 0) {
      scan.fail(`unknown section "${name}": expected one of ${SECTIONS.join(', ')}, written like select[ib]`, at);
    }
    if (seen & (1 << idx)) scan.fail(`${name}[...] appears twice; put all its terms in one ${name}[...]`, at);
    seen |= 1 << idx;
    scan.ws();
    if (scan.peek() !== 91 /* [ */) scan.fail(`expected "[" after ${name}`);
    scan.pos++;
    switch (name as SectionName) {
      case 'select':
        select = selectBody(scan);
        break;
      case 'rusage':
        rusage = rusageBody(scan);
        break;
      case 'span':
        span = spanBody(scan);
        break;
      case 'same':
        same = nameList(scan, 'same', 'an attribute name');
        break;
      case 'order':
        order = orderBody(scan);
        break;
    }
    scan.expect(']', `"]" to close ${name}[`);
  }
  return { kind: 'simple', select, rusage, span, same, order };
}

/** Parses a resource requirement. Throws ResReqSyntaxError with the 1-based column of the problem. */
export function parseResReq(text: string): ParsedResReq {
  return parse(new ResReqScanner(text));
}

/** Parses and refuses compound / alternative forms (for the profile's own requirement). */
export function parseSimpleResReq(text: string): ResReq {
  const r = parseResReq(text);
  if (r.kind === 'compound') {
    throw new ResReqSyntaxError(
      text,
      1,
      `a compound or alternative requirement ("${r.operator}" between whole requirements) is not allowed here`,
    );
  }
  return r;
}

/** True when the requirement sets no term at all (as `""` parses). */
export function isEmptyResReq(r: ResReq): boolean {
  return r.select.length === 0 && r.rusage.length === 0 && r.span === null && r.same === null && r.order === null;
}
