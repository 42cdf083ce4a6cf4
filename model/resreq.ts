// LSF-style resource requirement strings: parse, format, and check against resources.yaml.
//
//   select[ib && mem>64000 && (a100 || h100)] rusage[license_foam=1, mem=4000:duration=30m]
//   span[ptile=16] same[model] order[-slots:maxmem]
//
// Grammar (sections in any order, each at most once, separated by blanks):
//   select[expr]       expr := or; or := and ('||' and)*; and := unary ('&&' unary)*;
//                      unary := '!' unary | '(' or ')' | NAME [op value]; op := > >= < <= == != (= means ==);
//                      value := number | NAME | "quoted string". The top-level && terms are the
//                      requirement's select terms (what the additive rule ANDs).
//   rusage[item, ...]  item := NAME '=' number [':duration=' duration]; items separated by ',' or ':'.
//                      The number is an amount in thousandths at most (amount.ts): 0.5, 1.25, not 0.0005.
//                      duration: 30m, 1h, 90s, 1h30m; a bare number is minutes (as in LSF).
//   span[ptile=N]      tasks per host; span[hosts=N] number of hosts (both may be given: ptile=4,hosts=2).
//   same[attr:...]     all hosts of the job share these attribute values.
//   order[[-|+]key:...] host ordering; '-' means descending.
// Compound / alternative requirements: `{simple} + {simple}` and `simple || simple` (or with braces).
// They parse (so the merge can refuse them by name) but carry no multipliers.
//
// Formatting is canonical: sections in the order select, rusage, span, same, order; `&&` / `||`
// with blanks around them; comparisons without blanks (`mem>64000`); the fewest parentheses.

import { amountProblem } from './amount.js';
import type {
  CmpOp,
  CompoundResReq,
  OrderKey,
  ParsedResReq,
  ResReq,
  RusageItem,
  SelectExpr,
  Span,
} from './profile-types.js';
import { formatDuration, parseDuration, UnitSyntaxError } from './units.js';

/** A resource requirement longer than this is refused: it is typed by people, not generated. */
export const RESREQ_CHARS_MAX = 4096;
/** Bound on `( ! (` nesting: the parser recurses once per level. */
export const RESREQ_NESTING_MAX = 64;

export class ResReqSyntaxError extends Error {
  override readonly name = 'ResReqSyntaxError';
  /**
   * @param column 1-based column of the problem in `input`.
   * @param reason what is wrong and what was expected, without the position.
   */
  constructor(
    readonly input: string,
    readonly column: number,
    readonly reason: string,
  ) {
    super(`resource requirement "${input}", column ${column}: ${reason}`);
  }
}

const SECTIONS = ['select', 'rusage', 'span', 'same', 'order'] as const;
type SectionName = (typeof SECTIONS)[number];

const EMPTY: readonly never[] = Object.freeze([]);

// ---- character classes ----
function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13;
}
function isIdentStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95;
}
function isIdentPart(c: number): boolean {
  return isIdentStart(c) || (c >= 48 && c <= 57);
}
function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

const IDENT_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

class Parser {
  pos = 0;
  depth = 0;
  constructor(readonly s: string) {}

  fail(reason: string, at = this.pos): never {
    throw new ResReqSyntaxError(this.s, at + 1, reason);
  }

  ws(): void {
    const s = this.s;
    while (this.pos < s.length && isSpace(s.charCodeAt(this.pos))) this.pos++;
  }

  eof(): boolean {
    return this.pos >= this.s.length;
  }

  peek(): number {
    return this.pos < this.s.length ? this.s.charCodeAt(this.pos) : -1;
  }

  describeHere(): string {
    if (this.eof()) return 'the end';
    return `"${this.s.slice(this.pos, this.pos + 8)}"`;
  }

  expect(ch: string, what: string): void {
    this.ws();
    if (this.s.startsWith(ch, this.pos)) {
      this.pos += ch.length;
      return;
    }
    this.fail(`expected ${what} but found ${this.describeHere()}`);
  }

  ident(what: string): string {
    this.ws();
    const s = this.s;
    const start = this.pos;
    if (!isIdentStart(this.peek())) this.fail(`expected ${what} but found ${this.describeHere()}`);
    let p = start + 1;
    while (p < s.length && isIdentPart(s.charCodeAt(p))) p++;
    this.pos = p;
    return s.slice(start, p);
  }

  /** A number token at pos, or null when there is none (pos unchanged). */
  numberToken(): number | null {
    const s = this.s;
    let p = this.pos;
    if (s.charCodeAt(p) === 45 /* - */) p++;
    const digitsStart = p;
    while (p < s.length && isDigit(s.charCodeAt(p))) p++;
    if (p === digitsStart) return null;
    if (s.charCodeAt(p) === 46 /* . */ && isDigit(s.charCodeAt(p + 1))) {
      p += 2;
      while (p < s.length && isDigit(s.charCodeAt(p))) p++;
    }
    const c = s.charCodeAt(p);
    if (c === 101 || c === 69 /* e E */) {
      let q = p + 1;
      const sign = s.charCodeAt(q);
      if (sign === 43 || sign === 45) q++;
      if (isDigit(s.charCodeAt(q))) {
        while (q < s.length && isDigit(s.charCodeAt(q))) q++;
        p = q;
      }
    }
    if (p < s.length && isIdentPart(s.charCodeAt(p))) return null; // `64GB`, `3x`: not a plain number
    const v = Number(s.slice(this.pos, p));
    if (!Number.isFinite(v)) this.fail(`number out of range`);
    this.pos = p;
    return v === 0 ? 0 : v; // no -0: it would not survive a round trip through text
  }

  // ---- whole requirement ----

  parse(): ParsedResReq {
    if (this.s.length > RESREQ_CHARS_MAX) {
      throw new ResReqSyntaxError(
        this.s.slice(0, 40) + '...',
        RESREQ_CHARS_MAX + 1,
        `longer than ${RESREQ_CHARS_MAX} characters`,
      );
    }
    const first = this.part();
    this.ws();
    if (this.eof()) return first;
    const parts: ResReq[] = [first];
    let operator: '+' | '||' | null = null;
    while (!this.eof()) {
      const at = this.pos;
      let op: '+' | '||';
      if (this.s.startsWith('||', at)) op = '||';
      else if (this.s.charCodeAt(at) === 43) op = '+';
      else this.fail(`expected a section (${SECTIONS.join(', ')}), "+" or "||" but found ${this.describeHere()}`);
      if (operator !== null && operator !== op) {
        this.fail(`cannot mix "+" and "||" between whole requirements`, at);
      }
      operator = op;
      this.pos += op.length;
      this.ws();
      if (this.eof()) this.fail(`expected a requirement after "${op}"`);
      parts.push(this.part());
      this.ws();
    }
    const compound: CompoundResReq = { kind: 'compound', parts, operator: operator as '+' | '||' };
    return compound;
  }

  part(): ResReq {
    this.ws();
    if (this.peek() === 123 /* { */) {
      this.pos++;
      const r = this.simple(true);
      this.expect('}', '"}"');
      return r;
    }
    return this.simple(false);
  }

  simple(braced: boolean): ResReq {
    let select: readonly SelectExpr[] = EMPTY;
    let rusage: readonly RusageItem[] = EMPTY;
    let span: Span | null = null;
    let same: readonly string[] | null = null;
    let order: readonly OrderKey[] | null = null;
    let seen = 0;
    for (;;) {
      this.ws();
      const c = this.peek();
      if (
        c === -1 ||
        c === 43 /* + */ ||
        (c === 124 && this.s.charCodeAt(this.pos + 1) === 124) ||
        (braced && c === 125)
      )
        break;
      const at = this.pos;
      if (!isIdentStart(c)) {
        this.fail(`expected a section (${SECTIONS.join(', ')}) but found ${this.describeHere()}`);
      }
      const name = this.ident('a section name');
      const idx = (SECTIONS as readonly string[]).indexOf(name);
      if (idx < 0) {
        this.fail(`unknown section "${name}": expected one of ${SECTIONS.join(', ')}, written like select[ib]`, at);
      }
      if (seen & (1 << idx)) this.fail(`${name}[...] appears twice; put all its terms in one ${name}[...]`, at);
      seen |= 1 << idx;
      this.ws();
      if (this.peek() !== 91 /* [ */) this.fail(`expected "[" after ${name}`);
      this.pos++;
      switch (name as SectionName) {
        case 'select':
          select = this.selectBody();
          break;
        case 'rusage':
          rusage = this.rusageBody();
          break;
        case 'span':
          span = this.spanBody();
          break;
        case 'same':
          same = this.nameList('same', 'an attribute name');
          break;
        case 'order':
          order = this.orderBody();
          break;
      }
      this.expect(']', `"]" to close ${name}[`);
    }
    return { kind: 'simple', select, rusage, span, same, order };
  }

  // ---- select ----

  selectBody(): readonly SelectExpr[] {
    this.ws();
    if (this.peek() === 93) this.fail(`select[] is empty: give at least one term, e.g. select[ib]`);
    const e = this.or();
    return e.kind === 'and' ? e.args : [e];
  }

  or(): SelectExpr {
    const first = this.and();
    this.ws();
    if (!this.s.startsWith('||', this.pos)) return first;
    const args: SelectExpr[] = [];
    pushFlat(args, first, 'or');
    while (this.s.startsWith('||', this.pos)) {
      this.pos += 2;
      pushFlat(args, this.and(), 'or');
      this.ws();
    }
    return { kind: 'or', args };
  }

  and(): SelectExpr {
    const first = this.unary();
    this.ws();
    if (!this.s.startsWith('&&', this.pos)) return first;
    const args: SelectExpr[] = [];
    pushFlat(args, first, 'and');
    while (this.s.startsWith('&&', this.pos)) {
      this.pos += 2;
      pushFlat(args, this.unary(), 'and');
      this.ws();
    }
    return { kind: 'and', args };
  }

  unary(): SelectExpr {
    this.ws();
    const c = this.peek();
    if (c === 33 /* ! */ && this.s.charCodeAt(this.pos + 1) !== 61 /* != */) {
      this.pos++;
      this.enter();
      const expr = this.unary();
      this.depth--;
      return { kind: 'not', expr };
    }
    if (c === 40 /* ( */) {
      this.pos++;
      this.enter();
      const e = this.or();
      this.depth--;
      this.expect(')', '")"');
      return e;
    }
    return this.atom();
  }

  enter(): void {
    if (++this.depth > RESREQ_NESTING_MAX) this.fail(`nested more than ${RESREQ_NESTING_MAX} levels deep`);
  }

  atom(): SelectExpr {
    this.ws();
    if (!isIdentStart(this.peek())) {
      this.fail(`expected a resource name, "!" or "(" but found ${this.describeHere()}`);
    }
    const name = this.ident('a resource name');
    this.ws();
    const op = this.cmpOp();
    if (op === null) return { kind: 'bool', name };
    this.ws();
    return { kind: 'cmp', name, op, value: this.value() };
  }

  cmpOp(): CmpOp | null {
    const s = this.s;
    const c = s.charCodeAt(this.pos);
    const d = s.charCodeAt(this.pos + 1);
    if (c === 62 /* > */) return d === 61 ? this.take('>=') : this.take('>');
    if (c === 60 /* < */) return d === 61 ? this.take('<=') : this.take('<');
    if (c === 61 /* = */) {
      if (d === 61) return this.take('==');
      this.pos += 1;
      return '==';
    }
    if (c === 33 && d === 61) return this.take('!=');
    return null;
  }

  take<T extends CmpOp>(op: T): T {
    this.pos += op.length;
    return op;
  }

  value(): number | string {
    const c = this.peek();
    if (c === 34 /* " */) return this.quoted();
    const n = this.numberToken();
    if (n !== null) return n;
    if (isIdentStart(c)) return this.ident('a value');
    this.fail(`expected a number, a name or a "quoted string" but found ${this.describeHere()}`);
  }

  quoted(): string {
    const s = this.s;
    const start = this.pos;
    let p = start + 1;
    let out = '';
    for (;;) {
      if (p >= s.length) this.fail(`unterminated string`, start);
      const c = s.charCodeAt(p);
      if (c === 34) break;
      if (c === 92 /* \ */) {
        const e = s.charCodeAt(p + 1);
        if (e !== 34 && e !== 92) this.fail(`only \\" and \\\\ may be escaped in a string`, p);
        out += s[p + 1];
        p += 2;
        continue;
      }
      out += s[p];
      p++;
    }
    this.pos = p + 1;
    return out;
  }

  // ---- rusage ----

  rusageBody(): readonly RusageItem[] {
    const items: RusageItem[] = [];
    for (;;) {
      this.ws();
      if (this.peek() === 93 && items.length === 0)
        this.fail(`rusage[] is empty: give at least one item, e.g. rusage[mem=4000]`);
      const at = this.pos;
      const name = this.ident('a resource name');
      if (name === 'duration') this.fail(`duration must follow an item, as in rusage[mem=4000:duration=30m]`, at);
      if (items.some((i) => i.name === name)) this.fail(`rusage names ${name} twice`, at);
      this.expect('=', `"=" after ${name}`);
      this.ws();
      const vAt = this.pos;
      const value = this.numberToken();
      if (value === null) this.fail(`expected a number for ${name}`);
      if (value < 0) this.fail(`rusage value of ${name} must not be negative`, vAt);
      const amount = amountProblem(value);
      if (amount !== null) this.fail(`rusage value of ${name}: ${amount}`, vAt);
      let item: RusageItem = { name, value };
      this.ws();
      // `:duration=` belongs to the item before it; any other `:` or `,` starts the next item.
      if (this.peek() === 58 /* : */) {
        const save = this.pos;
        this.pos++;
        this.ws();
        if (this.s.startsWith('duration', this.pos) && !isIdentPart(this.s.charCodeAt(this.pos + 8))) {
          this.pos += 8;
          this.expect('=', '"=" after duration');
          this.ws();
          item = { name, value, duration_s: this.duration() };
          this.ws();
        } else {
          this.pos = save;
        }
      }
      items.push(item);
      const c = this.peek();
      if (c === 44 || c === 58) {
        this.pos++;
        continue;
      }
      return items;
    }
  }

  duration(): number {
    const s = this.s;
    const start = this.pos;
    let p = start;
    while (p < s.length && isIdentPart(s.charCodeAt(p))) p++;
    const text = s.slice(start, p);
    if (text.length === 0) this.fail(`expected a duration such as 30m or 1h`);
    this.pos = p;
    if (/^\d+$/.test(text)) return Number(text) * 60; // LSF: a bare duration is minutes
    try {
      return parseDuration(text);
    } catch (err) {
      if (err instanceof UnitSyntaxError) this.fail(err.message, start);
      throw err;
    }
  }

  // ---- span, same, order ----

  spanBody(): Span {
    let ptile: number | undefined;
    let hosts: number | undefined;
    for (;;) {
      this.ws();
      const at = this.pos;
      const key = this.ident('ptile or hosts');
      if (key !== 'ptile' && key !== 'hosts') this.fail(`span supports ptile and hosts, not ${key}`, at);
      if ((key === 'ptile' ? ptile : hosts) !== undefined) this.fail(`span sets ${key} twice`, at);
      this.expect('=', `"=" after ${key}`);
      this.ws();
      const vAt = this.pos;
      const v = this.numberToken();
      if (v === null || !Number.isInteger(v) || v < 1)
        this.fail(`span ${key} must be a whole number of at least 1`, vAt);
      if (key === 'ptile') ptile = v;
      else hosts = v;
      this.ws();
      const c = this.peek();
      if (c === 44 || c === 58) {
        this.pos++;
        continue;
      }
      break;
    }
    if (ptile !== undefined && hosts !== undefined) return { ptile, hosts };
    return ptile !== undefined ? { ptile } : { hosts: hosts as number };
  }

  nameList(section: string, what: string): readonly string[] {
    const names: string[] = [];
    for (;;) {
      const at = this.pos;
      const n = this.ident(what);
      if (names.includes(n)) this.fail(`${section} names ${n} twice`, at);
      names.push(n);
      this.ws();
      const c = this.peek();
      if (c === 44 || c === 58) {
        this.pos++;
        continue;
      }
      return names;
    }
  }

  orderBody(): readonly OrderKey[] {
    const keys: OrderKey[] = [];
    for (;;) {
      this.ws();
      let descending = false;
      const c = this.peek();
      if (c === 45 || c === 43) {
        descending = c === 45;
        this.pos++;
      }
      const at = this.pos;
      const name = this.ident('a resource name to order by');
      if (keys.some((k) => k.name === name)) this.fail(`order names ${name} twice`, at);
      keys.push({ name, descending });
      this.ws();
      const d = this.peek();
      if (d === 44 || d === 58) {
        this.pos++;
        continue;
      }
      return keys;
    }
  }
}

function pushFlat(out: SelectExpr[], e: SelectExpr, kind: 'and' | 'or'): void {
  if (e.kind === kind) for (const a of e.args) out.push(a);
  else out.push(e);
}

/** Parses a resource requirement. Throws ResReqSyntaxError with the 1-based column of the problem. */
export function parseResReq(text: string): ParsedResReq {
  return new Parser(text).parse();
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

// ---- formatting ----

const PREC_OR = 1;
const PREC_AND = 2;
const PREC_NOT = 3;

export function formatSelectExpr(e: SelectExpr): string {
  return fmtExpr(e, 0);
}

function fmtExpr(e: SelectExpr, parent: number): string {
  switch (e.kind) {
    case 'bool':
      return e.name;
    case 'cmp':
      return `${e.name}${e.op}${formatValue(e.value)}`;
    case 'not':
      return `!${fmtExpr(e.expr, PREC_NOT)}`;
    case 'and': {
      const s = e.args.map((a) => fmtExpr(a, PREC_AND)).join(' && ');
      return parent > PREC_AND ? `(${s})` : s;
    }
    case 'or': {
      const s = e.args.map((a) => fmtExpr(a, PREC_OR)).join(' || ');
      return parent > PREC_OR ? `(${s})` : s;
    }
  }
}

function formatValue(v: number | string): string {
  if (typeof v === 'number') return String(v);
  if (IDENT_RE.test(v)) return v;
  return `"${v.replace(/[\\"]/g, (m) => `\\${m}`)}"`;
}

/** The select section's body: terms ANDed, an `||` term in parentheses when it is not alone. */
export function formatSelectTerms(terms: readonly SelectExpr[]): string {
  if (terms.length === 1) return fmtExpr(terms[0] as SelectExpr, 0);
  return terms.map((t) => fmtExpr(t, PREC_AND)).join(' && ');
}

/** `license_foam=1` or `mem=4000:duration=30m` (no section name). */
export function formatRusageItem(i: RusageItem): string {
  return i.duration_s === undefined
    ? `${i.name}=${i.value}`
    : `${i.name}=${i.value}:duration=${formatDuration(i.duration_s)}`;
}

/** `span[ptile=16]`, `span[hosts=1]`, `span[ptile=4:hosts=2]`. */
export function formatSpan(s: Span): string {
  const parts: string[] = [];
  if (s.ptile !== undefined) parts.push(`ptile=${s.ptile}`);
  if (s.hosts !== undefined) parts.push(`hosts=${s.hosts}`);
  return `span[${parts.join(':')}]`;
}

export function formatSame(names: readonly string[]): string {
  return `same[${names.join(':')}]`;
}

export function formatOrder(keys: readonly OrderKey[]): string {
  return `order[${keys.map((k) => (k.descending ? `-${k.name}` : k.name)).join(':')}]`;
}

export function formatSimpleResReq(r: ResReq): string {
  const out: string[] = [];
  if (r.select.length > 0) out.push(`select[${formatSelectTerms(r.select)}]`);
  if (r.rusage.length > 0) out.push(`rusage[${r.rusage.map(formatRusageItem).join(',')}]`);
  if (r.span !== null) out.push(formatSpan(r.span));
  if (r.same !== null) out.push(formatSame(r.same));
  if (r.order !== null) out.push(formatOrder(r.order));
  return out.join(' ');
}

export function formatResReq(r: ParsedResReq): string {
  if (r.kind === 'simple') return formatSimpleResReq(r);
  return r.parts.map((p) => `{${formatSimpleResReq(p)}}`).join(` ${r.operator} `);
}

// ---- cross-reference against resources.yaml ----

export type ResourceType = 'boolean' | 'numeric' | 'string';

export interface ResourceRef {
  readonly type: ResourceType;
}

/**
 * Host facts every worker reports without a resources.yaml entry (LSF built-ins): usable in
 * select, same and order. `hname` and `type`/`model` are strings, the rest numeric.
 */
export const BUILTIN_HOST_RESOURCES: ReadonlyMap<string, ResourceRef> = new Map<string, ResourceRef>([
  ['hname', { type: 'string' }],
  ['type', { type: 'string' }],
  ['model', { type: 'string' }],
  ['slots', { type: 'numeric' }],
  ['ncpus', { type: 'numeric' }],
  ['maxmem', { type: 'numeric' }],
]);

export interface ResReqReferenceProblem {
  readonly section: SectionName;
  readonly name: string;
  readonly message: string;
}

/**
 * Every resource a requirement names must exist (in resources.yaml or among the built-ins), and be
 * of a kind that fits its use: a bare select term is a boolean, a consumption in rusage is numeric.
 * Returns the problems (empty when none), in the order they appear.
 */
export function checkResReqResources(
  r: ParsedResReq,
  resources: ReadonlyMap<string, ResourceRef>,
): ResReqReferenceProblem[] {
  const problems: ResReqReferenceProblem[] = [];
  const lookup = (n: string): ResourceRef | undefined => resources.get(n) ?? BUILTIN_HOST_RESOURCES.get(n);
  const unknown = (section: SectionName, name: string): void => {
    problems.push({
      section,
      name,
      message: `${section}[...] names resource "${name}", which is not defined in resources.yaml`,
    });
  };
  const walk = (e: SelectExpr): void => {
    switch (e.kind) {
      case 'bool': {
        const d = lookup(e.name);
        if (d === undefined) unknown('select', e.name);
        else if (d.type !== 'boolean') {
          problems.push({
            section: 'select',
            name: e.name,
            message: `select[...] uses "${e.name}" alone, but it is a ${d.type} resource: compare it, e.g. ${e.name}>0`,
          });
        }
        return;
      }
      case 'cmp': {
        const d = lookup(e.name);
        if (d === undefined) unknown('select', e.name);
        else if (d.type === 'boolean') {
          problems.push({
            section: 'select',
            name: e.name,
            message: `select[...] compares "${e.name}", but it is a boolean resource: write ${e.name} or !${e.name}`,
          });
        }
        return;
      }
      case 'not':
        walk(e.expr);
        return;
      case 'and':
      case 'or':
        for (const a of e.args) walk(a);
        return;
    }
  };
  const parts = r.kind === 'simple' ? [r] : r.parts;
  for (const p of parts) {
    for (const t of p.select) walk(t);
    for (const u of p.rusage) {
      const d = lookup(u.name);
      if (d === undefined) unknown('rusage', u.name);
      else if (d.type !== 'numeric') {
        problems.push({
          section: 'rusage',
          name: u.name,
          message: `rusage[...] reserves "${u.name}", but only numeric resources can be reserved (it is ${d.type})`,
        });
      }
    }
    for (const n of p.same ?? EMPTY) if (lookup(n) === undefined) unknown('same', n);
    for (const k of p.order ?? EMPTY) if (lookup(k.name) === undefined) unknown('order', k.name);
  }
  return problems;
}
