// Formatting resource requirements, canonically: sections in the order select, rusage, span, same,
// order; `&&` / `||` with blanks around them; comparisons without blanks (`mem>64000`); the fewest
// parentheses. What a profile or a refusal shows is what parseResReq reads back the same.

import type { OrderKey, ParsedResReq, ResReq, RusageItem, SelectExpr, Span } from './profile-types.js';
import { formatDuration } from './units.js';

const IDENT_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

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
