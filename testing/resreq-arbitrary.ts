// fast-check generators of resource requirements in normal form (what the parser produces): used by
// the round-trip property tests and the merge property tests. Test-only (imported by *.test.ts).

import fc from 'fast-check';
import type { CompoundResReq, OrderKey, ResReq, RusageItem, SelectExpr, Span } from '../model/profile-types.js';

/** Plain objects, as the parser builds (deepStrictEqual compares prototypes). */
const PLAIN = { noNullPrototype: true } as const;

const RESERVED = new Set(['duration']);
export const arbName: fc.Arbitrary<string> = fc
  .stringMatching(/^[a-z_][a-z0-9_]{0,7}$/)
  .filter((s) => !RESERVED.has(s));

const arbNumber: fc.Arbitrary<number> = fc
  .oneof(fc.integer({ min: -1_000_000, max: 1_000_000 }), fc.double({ noNaN: true, noDefaultInfinity: true }))
  .map((n) => (Object.is(n, -0) ? 0 : n));

const arbValue: fc.Arbitrary<number | string> = fc.oneof(arbNumber, arbName, fc.string({ maxLength: 6 }));

const arbCmp = fc.record(
  {
    kind: fc.constant('cmp' as const),
    name: arbName,
    op: fc.constantFrom('>', '>=', '<', '<=', '==', '!=' as const),
    value: arbValue,
  },
  PLAIN,
);

export const arbSelectExpr: fc.Arbitrary<SelectExpr> = fc.letrec<{ expr: SelectExpr }>((tie) => ({
  expr: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ kind: fc.constant('bool' as const), name: arbName }, PLAIN),
    arbCmp,
    fc.record({ kind: fc.constant('not' as const), expr: tie('expr') }, PLAIN),
    fc
      .array(
        tie('expr').filter((e) => e.kind !== 'and'),
        { minLength: 2, maxLength: 3 },
      )
      .map((args) => ({ kind: 'and' as const, args })),
    fc
      .array(
        tie('expr').filter((e) => e.kind !== 'or'),
        { minLength: 2, maxLength: 3 },
      )
      .map((args) => ({ kind: 'or' as const, args })),
  ),
})).expr;

/** Top-level select terms: never an `and` (the parser splits those into terms). */
export const arbSelectTerms: fc.Arbitrary<SelectExpr[]> = fc.array(
  arbSelectExpr.filter((e) => e.kind !== 'and'),
  { maxLength: 4 },
);

/** A reservation amount as the parser accepts it: whole thousandths (model/amount.ts), 0.1 + 0.2 style included. */
export const arbRusageAmount: fc.Arbitrary<number> = fc.oneof(
  fc.nat({ max: 100_000 }),
  fc.constantFrom(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.001, 1.005),
  fc.nat({ max: 1e9 }).map((milli) => milli / 1000),
);

export const arbRusage: fc.Arbitrary<RusageItem[]> = fc.uniqueArray(
  fc
    .tuple(arbName, arbRusageAmount, fc.option(fc.nat({ max: 10 ** 6 }), { nil: undefined }))
    .map(([name, value, d]): RusageItem => (d === undefined ? { name, value } : { name, value, duration_s: d })),
  { selector: (i) => i.name, maxLength: 4 },
);

export const arbSpan: fc.Arbitrary<Span> = fc.oneof(
  fc.integer({ min: 1, max: 128 }).map((ptile): Span => ({ ptile })),
  fc.integer({ min: 1, max: 64 }).map((hosts): Span => ({ hosts })),
  fc
    .tuple(fc.integer({ min: 1, max: 128 }), fc.integer({ min: 1, max: 64 }))
    .map(([ptile, hosts]): Span => ({ ptile, hosts })),
);

export const arbSame: fc.Arbitrary<string[]> = fc.uniqueArray(arbName, { minLength: 1, maxLength: 3 });
export const arbOrder: fc.Arbitrary<OrderKey[]> = fc.uniqueArray(
  fc.record({ name: arbName, descending: fc.boolean() }, PLAIN),
  { selector: (k) => k.name, minLength: 1, maxLength: 3 },
);

export const arbSimpleResReq: fc.Arbitrary<ResReq> = fc.record(
  {
    kind: fc.constant('simple' as const),
    select: arbSelectTerms,
    rusage: arbRusage,
    span: fc.option(arbSpan, { nil: null }),
    same: fc.option(arbSame, { nil: null }),
    order: fc.option(arbOrder, { nil: null }),
  },
  PLAIN,
);

export const arbCompoundResReq: fc.Arbitrary<CompoundResReq> = fc.record(
  {
    kind: fc.constant('compound' as const),
    parts: fc.array(arbSimpleResReq, { minLength: 2, maxLength: 3 }),
    operator: fc.constantFrom('+', '||' as const),
  },
  PLAIN,
);
