// The additive rule for the resource requirement: select terms ANDed (the profile's first), rusage
// added to (a profile's item restated, never changed), span / same / order as merge-placement.ts
// says; a compound or alternative requirement only under a profile that sets no terms.

import { type MergeResult, reject } from './merge-result.js';
import { isWithOrigin, orderEqual, pick, sameEqual, spanEqual } from './merge-placement.js';
import type { ProfileWrapped } from './merge-wrapped.js';
import type {
  EffectiveResReq,
  OrderKey,
  ParsedResReq,
  Profile,
  ResReq,
  RusageItem,
  SelectExpr,
  Span,
  WithOrigin,
} from './profile-types.js';
import {
  formatOrder,
  formatResReq,
  formatRusageItem,
  formatSame,
  formatSimpleResReq,
  formatSpan,
  isEmptyResReq,
} from './resreq.js';

const NONE: readonly never[] = Object.freeze([]);

/** The effective requirement of the job's own one (`jr`) under the profile's, or the refusal. */
export function mergeJobResReq(
  profile: Profile,
  jr: ParsedResReq | null,
  w: ProfileWrapped,
): EffectiveResReq | MergeResult {
  const p = profile.resreq;
  if (jr !== null && jr.kind === 'compound') {
    if (p !== null && !isEmptyResReq(p)) {
      const pv = formatSimpleResReq(p);
      return reject(
        profile,
        'resreq',
        pv,
        formatResReq(jr),
        `job sets a compound resource requirement (${formatResReq(jr)}) but application profile ${profile.name} requires ${pv}; ` +
          `compound and alternative ("${jr.operator}") requirements are not supported under a profile that sets resource requirement terms`,
      );
    }
    return { select: NONE, rusage: NONE, span: null, same: null, order: null, compound: jr };
  }
  return mergeResReq(profile, p, jr, w);
}

export function isEffective(r: EffectiveResReq | MergeResult): r is EffectiveResReq {
  return (r as MergeResult).ok === undefined;
}

function mergeResReq(
  profile: Profile,
  p: ResReq | null,
  j: ResReq | null,
  w: ProfileWrapped,
): EffectiveResReq | MergeResult {
  // select: the profile's terms first, then the job's; each is ANDed as a whole.
  const pSel = p === null ? NONE : p.select;
  const jSel = j === null ? NONE : j.select;
  const select: WithOrigin<SelectExpr>[] = new Array(pSel.length + jSel.length);
  let n = 0;
  for (const t of w.select) select[n++] = t;
  for (const t of jSel) select[n++] = { value: t, origin: 'job' };

  // rusage: the job may reserve other resources, and may restate the profile's, not change them.
  const pRu = p === null ? NONE : p.rusage;
  const jRu = j === null ? NONE : j.rusage;
  const rusage: WithOrigin<RusageItem>[] = [];
  for (const t of w.rusage) rusage.push(t);
  for (const t of jRu) {
    let clash: RusageItem | undefined;
    for (const q of pRu) {
      if (q.name === t.name) {
        clash = q;
        break;
      }
    }
    if (clash === undefined) rusage.push({ value: t, origin: 'job' });
    else if (clash.value !== t.value || clash.duration_s !== t.duration_s) {
      const pv = `rusage[${formatRusageItem(clash)}]`;
      const jv = `rusage[${formatRusageItem(t)}]`;
      return reject(profile, 'rusage', pv, jv, `job sets ${jv} but application profile ${profile.name} requires ${pv}`);
    }
  }

  const span = pick<Span>(profile, 'span', p?.span ?? null, j?.span ?? null, spanEqual, formatSpan);
  if (span !== null && !isWithOrigin(span)) return span;
  const same = pick<readonly string[]>(profile, 'same', p?.same ?? null, j?.same ?? null, sameEqual, formatSame);
  if (same !== null && !isWithOrigin(same)) return same;
  const order = pick<readonly OrderKey[]>(
    profile,
    'order',
    p?.order ?? null,
    j?.order ?? null,
    orderEqual,
    formatOrder,
  );
  if (order !== null && !isWithOrigin(order)) return order;
  return { select, rusage, span, same, order };
}
