// The select section of a resource requirement: `&&`, `||`, `!`, parentheses, comparisons and
// bare boolean resources, parsed into SelectExpr (a run of one operator flattened: a && b && c is
// one `and`). Its top-level && terms are the requirement's select terms.

import type { CmpOp, SelectExpr } from './profile-types.js';
import { isIdentStart, type ResReqScanner } from './resreq-scanner.js';

export function selectBody(scan: ResReqScanner): readonly SelectExpr[] {
  scan.ws();
  if (scan.peek() === 93) scan.fail(`select[] is empty: give at least one term, e.g. select[ib]`);
  const e = orExpr(scan);
  return e.kind === 'and' ? e.args : [e];
}

function orExpr(scan: ResReqScanner): SelectExpr {
  return run(scan, '||', 'or', andExpr);
}

function andExpr(scan: ResReqScanner): SelectExpr {
  return run(scan, '&&', 'and', unaryExpr);
}

/** `x op y op z` as one flat `kind` expression (x alone when no `op` follows it). */
function run(
  scan: ResReqScanner,
  op: '||' | '&&',
  kind: 'or' | 'and',
  operand: (scan: ResReqScanner) => SelectExpr,
): SelectExpr {
  const first = operand(scan);
  scan.ws();
  if (!scan.s.startsWith(op, scan.pos)) return first;
  const args: SelectExpr[] = [];
  pushFlat(args, first, kind);
  while (scan.s.startsWith(op, scan.pos)) {
    scan.pos += 2;
    pushFlat(args, operand(scan), kind);
    scan.ws();
  }
  return { kind, args };
}

function unaryExpr(scan: ResReqScanner): SelectExpr {
  scan.ws();
  const c = scan.peek();
  if (c === 33 /* ! */ && scan.s.charCodeAt(scan.pos + 1) !== 61 /* != */) {
    scan.pos++;
    scan.enter();
    const expr = unaryExpr(scan);
    scan.depth--;
    return { kind: 'not', expr };
  }
  if (c === 40 /* ( */) {
    scan.pos++;
    scan.enter();
    const e = orExpr(scan);
    scan.depth--;
    scan.expect(')', '")"');
    return e;
  }
  return atom(scan);
}

function atom(scan: ResReqScanner): SelectExpr {
  scan.ws();
  if (!isIdentStart(scan.peek())) {
    scan.fail(`expected a resource name, "!" or "(" but found ${scan.describeHere()}`);
  }
  const name = scan.ident('a resource name');
  scan.ws();
  const op = cmpOp(scan);
  if (op === null) return { kind: 'bool', name };
  scan.ws();
  return { kind: 'cmp', name, op, value: value(scan) };
}

function cmpOp(scan: ResReqScanner): CmpOp | null {
  const s = scan.s;
  const c = s.charCodeAt(scan.pos);
  const d = s.charCodeAt(scan.pos + 1);
  if (c === 62 /* > */) return d === 61 ? take(scan, '>=') : take(scan, '>');
  if (c === 60 /* < */) return d === 61 ? take(scan, '<=') : take(scan, '<');
  if (c === 61 /* = */) {
    if (d === 61) return take(scan, '==');
    scan.pos += 1;
    return '==';
  }
  if (c === 33 && d === 61) return take(scan, '!=');
  return null;
}

function take<T extends CmpOp>(scan: ResReqScanner, op: T): T {
  scan.pos += op.length;
  return op;
}

function value(scan: ResReqScanner): number | string {
  const c = scan.peek();
  if (c === 34 /* " */) return quoted(scan);
  const n = scan.numberToken();
  if (n !== null) return n;
  if (isIdentStart(c)) return scan.ident('a value');
  scan.fail(`expected a number, a name or a "quoted string" but found ${scan.describeHere()}`);
}

function quoted(scan: ResReqScanner): string {
  const s = scan.s;
  const start = scan.pos;
  let p = start + 1;
  let out = '';
  for (;;) {
    if (p >= s.length) scan.fail(`unterminated string`, start);
    const c = s.charCodeAt(p);
    if (c === 34) break;
    if (c === 92 /* \ */) {
      const e = s.charCodeAt(p + 1);
      if (e !== 34 && e !== 92) scan.fail(`only \\" and \\\\ may be escaped in a string`, p);
      out += s[p + 1];
      p += 2;
      continue;
    }
    out += s[p];
    p++;
  }
  scan.pos = p + 1;
  return out;
}

function pushFlat(out: SelectExpr[], e: SelectExpr, kind: 'and' | 'or'): void {
  if (e.kind === kind) for (const a of e.args) out.push(a);
  else out.push(e);
}
