// The codec of an effective resource requirement (EffectiveResReq, inside a dispatch record): its
// select expressions, rusage, span, same and order terms each with its origin, and a compound
// requirement's parts.

import { type Reader, type StructRef, WireError, type Writer } from '../wire/capnp-wire.js';
import type {
  CompoundResReq,
  EffectiveResReq,
  OrderKey,
  ResReq,
  RusageItem,
  SelectExpr,
  Span,
  WithOrigin,
} from '../model/profile-types.js';
import { CMP_OPS, EMPTY, enumAt, originNum, originOf } from './codec-shared.js';
import { readTextListOrEmpty, writeTextList } from './shared-values-codec.js';

/** SelectExpr: 1 data word (the union tag), 1 pointer. */
function writeSelectExprAt(w: Writer, d: number, e: SelectExpr): void {
  const p = d + 8;
  switch (e.kind) {
    case 'bool':
      w.text(p, e.name);
      return;
    case 'cmp': {
      w.u16(d, 1);
      const c = w.struct(p, 2, 2);
      w.text(c + 16, e.name);
      w.u16(c, CMP_OPS.indexOf(e.op));
      if (typeof e.value === 'string') {
        w.bool(c, 16, true);
        w.text(c + 24, e.value);
      } else {
        w.f64(c + 8, e.value);
      }
      return;
    }
    case 'not':
      w.u16(d, 2);
      writeSelectExprAt(w, w.struct(p, 1, 1), e.expr);
      return;
    case 'and':
    case 'or': {
      w.u16(d, e.kind === 'and' ? 3 : 4);
      let at = w.structList(p, e.args.length, 1, 1);
      for (const a of e.args) {
        writeSelectExprAt(w, at, a);
        at += 16;
      }
      return;
    }
  }
}

/** EffectiveResReq: 0 data words, 6 pointers. */
export function writeEffectiveResReq(w: Writer, ptr: number, r: EffectiveResReq): void {
  const p = w.struct(ptr, 0, 6);
  writeResReqBody(w, p, r.select, r.rusage, r.span, r.same, r.order);
  if (r.compound !== undefined) writeCompound(w, p + 40, r.compound);
}

function writeResReqBody(
  w: Writer,
  p: number,
  select: readonly WithOrigin<SelectExpr>[],
  rusage: readonly WithOrigin<RusageItem>[],
  span: WithOrigin<Span> | null,
  same: WithOrigin<readonly string[]> | null,
  order: WithOrigin<readonly OrderKey[]> | null,
): void {
  if (select.length > 0) {
    let at = w.structList(p, select.length, 1, 1); // SelectTerm: expr p0, origin d0
    for (const t of select) {
      w.u16(at, originNum(t.origin));
      writeSelectExprAt(w, w.struct(at + 8, 1, 1), t.value);
      at += 16;
    }
  }
  if (rusage.length > 0) {
    let at = w.structList(p + 8, rusage.length, 3, 1); // RusageTerm: name p0, value d0, hasDuration b64, durationS d16, origin d10
    for (const t of rusage) {
      w.f64(at, t.value.value);
      if (t.value.duration_s !== undefined) {
        w.bool(at, 64, true);
        w.f64(at + 16, t.value.duration_s);
      }
      w.u16(at + 10, originNum(t.origin));
      w.text(at + 24, t.value.name);
      at += 32;
    }
  }
  if (span !== null) {
    const d = w.struct(p + 16, 2, 0); // SpanTerm: ptile d0, hosts d4, origin d8
    if (span.value.ptile !== undefined) w.u32(d, span.value.ptile);
    if (span.value.hosts !== undefined) w.u32(d + 4, span.value.hosts);
    w.u16(d + 8, originNum(span.origin));
  }
  if (same !== null) {
    const d = w.struct(p + 24, 1, 1); // SameTerm: names p0, origin d0
    w.u16(d, originNum(same.origin));
    if (same.value.length > 0) writeTextList(w, d + 8, same.value);
    else w.pointerList(d + 8, 0);
  }
  if (order !== null) {
    const d = w.struct(p + 32, 1, 1); // OrderTerm: keys p0, origin d0
    w.u16(d, originNum(order.origin));
    let at = w.structList(d + 8, order.value.length, 1, 1); // OrderKey: name p0, descending b0
    for (const k of order.value) {
      w.bool(at, 0, k.descending);
      w.text(at + 8, k.name);
      at += 16;
    }
  }
}

function writeCompound(w: Writer, ptr: number, c: CompoundResReq): void {
  const p = w.struct(ptr, 0, 2); // CompoundResReq: parts p0, operator p1
  let at = w.structList(p, c.parts.length, 0, 6);
  for (const part of c.parts) {
    const job = <T>(v: T): WithOrigin<T> => ({ value: v, origin: 'job' });
    writeResReqBody(
      w,
      at,
      part.select.map(job),
      part.rusage.map(job),
      part.span === null ? null : job(part.span),
      part.same === null ? null : job(part.same),
      part.order === null ? null : job(part.order),
    );
    at += 48;
  }
  w.text(p + 8, c.operator);
}

function readSelectExpr(r: Reader, s: StructRef): SelectExpr {
  r.enter(s.data);
  try {
    const tag = r.u16(s, 0);
    const p = r.ptr(s, 0);
    switch (tag) {
      case 0:
        return { kind: 'bool', name: r.text(s, 0) ?? '' };
      case 1: {
        const c = p < 0 ? null : r.struct(p);
        if (c === null) throw new WireError('select comparison without its body', s.data);
        const name = r.text(c, 0) ?? '';
        const op = enumAt(CMP_OPS, r.u16(c, 0), 'comparison operator', c.data);
        const value: number | string = r.bool(c, 16) ? (r.text(c, 1) ?? '') : r.f64(c, 8);
        return { kind: 'cmp', name, op, value };
      }
      case 2: {
        const inner = p < 0 ? null : r.struct(p);
        if (inner === null) throw new WireError('select `not` without its operand', s.data);
        return { kind: 'not', expr: readSelectExpr(r, inner) };
      }
      case 3:
      case 4: {
        const l = p < 0 ? null : r.list(p);
        const args: SelectExpr[] = [];
        if (l !== null) for (let i = 0; i < l.count; i++) args.push(readSelectExpr(r, r.elem(l, i)));
        return { kind: tag === 3 ? 'and' : 'or', args };
      }
      default:
        throw new WireError(`unknown select expression kind ${tag}`, s.data);
    }
  } finally {
    r.leave();
  }
}

interface ResReqBody {
  select: readonly WithOrigin<SelectExpr>[];
  rusage: readonly WithOrigin<RusageItem>[];
  span: WithOrigin<Span> | null;
  same: WithOrigin<readonly string[]> | null;
  order: WithOrigin<readonly OrderKey[]> | null;
}

function readResReqBody(r: Reader, s: StructRef): ResReqBody {
  let select: readonly WithOrigin<SelectExpr>[] = EMPTY;
  const sl = s.ptrCount > 0 ? r.list(r.ptr(s, 0)) : null;
  if (sl !== null && sl.count > 0) {
    const out: WithOrigin<SelectExpr>[] = (select = []) as WithOrigin<SelectExpr>[];
    for (let i = 0; i < sl.count; i++) {
      const t = r.elem(sl, i);
      const e = t.ptrCount > 0 ? r.struct(r.ptr(t, 0)) : null;
      if (e === null) throw new WireError('select term without its expression', t.data);
      out.push({ value: readSelectExpr(r, e), origin: originOf(r.u16(t, 0)) });
    }
  }
  let rusage: readonly WithOrigin<RusageItem>[] = EMPTY;
  const rl = s.ptrCount > 1 ? r.list(r.ptr(s, 1)) : null;
  if (rl !== null && rl.count > 0) {
    const out: WithOrigin<RusageItem>[] = (rusage = []) as WithOrigin<RusageItem>[];
    for (let i = 0; i < rl.count; i++) {
      const t = r.elem(rl, i);
      const item: RusageItem = r.bool(t, 64)
        ? { name: r.text(t, 0) ?? '', value: r.f64(t, 0), duration_s: r.f64(t, 16) }
        : { name: r.text(t, 0) ?? '', value: r.f64(t, 0) };
      out.push({ value: item, origin: originOf(r.u16(t, 10)) });
    }
  }
  let span: WithOrigin<Span> | null = null;
  const sp = s.ptrCount > 2 ? r.struct(r.ptr(s, 2)) : null;
  if (sp !== null) {
    const ptile = r.u32(sp, 0);
    const hosts = r.u32(sp, 4);
    const v: { ptile?: number; hosts?: number } = {};
    if (ptile !== 0) v.ptile = ptile;
    if (hosts !== 0) v.hosts = hosts;
    span = { value: v, origin: originOf(r.u16(sp, 8)) };
  }
  let same: WithOrigin<readonly string[]> | null = null;
  const sa = s.ptrCount > 3 ? r.struct(r.ptr(s, 3)) : null;
  if (sa !== null) same = { value: readTextListOrEmpty(r, r.ptr(sa, 0)), origin: originOf(r.u16(sa, 0)) };
  let order: WithOrigin<readonly OrderKey[]> | null = null;
  const or = s.ptrCount > 4 ? r.struct(r.ptr(s, 4)) : null;
  if (or !== null) {
    const keys: OrderKey[] = [];
    const kl = or.ptrCount > 0 ? r.list(r.ptr(or, 0)) : null;
    if (kl !== null) {
      for (let i = 0; i < kl.count; i++) {
        const k = r.elem(kl, i);
        keys.push({ name: r.text(k, 0) ?? '', descending: r.bool(k, 0) });
      }
    }
    order = { value: keys, origin: originOf(r.u16(or, 0)) };
  }
  return { select, rusage, span, same, order };
}

export function readEffectiveResReq(r: Reader, ptr: number): EffectiveResReq {
  const s = ptr < 0 ? null : r.struct(ptr);
  if (s === null) return { select: EMPTY, rusage: EMPTY, span: null, same: null, order: null };
  const body: EffectiveResReq = readResReqBody(r, s);
  const c = s.ptrCount > 5 ? r.struct(r.ptr(s, 5)) : null;
  if (c === null) return body;
  const parts: ResReq[] = [];
  const pl = c.ptrCount > 0 ? r.list(r.ptr(c, 0)) : null;
  if (pl !== null) {
    for (let i = 0; i < pl.count; i++) {
      const b = readResReqBody(r, r.elem(pl, i));
      parts.push({
        kind: 'simple',
        select: b.select.map((t) => t.value),
        rusage: b.rusage.map((t) => t.value),
        span: b.span === null ? null : b.span.value,
        same: b.same === null ? null : b.same.value,
        order: b.order === null ? null : b.order.value,
      });
    }
  }
  const op = r.text(c, 1);
  if (op !== '+' && op !== '||') throw new WireError(`unknown compound operator ${JSON.stringify(op)}`, c.data);
  return { ...body, compound: { kind: 'compound', parts, operator: op } };
}
