// fast-check generators of the scalars and texts of the replicated facts (facts-arbitrary.ts builds
// the facts from them), at the extremes the schema allows: 0 and the largest integers each field
// carries, negative times, NaN / -0 / infinities in Float64 fields, empty and long texts, unicode and
// control characters (NUL included). Test-only.

import fc from 'fast-check';

// ---- scalars at their extremes ----

export const U32_MAX = 2 ** 32 - 1;
const I32_MIN = -(2 ** 31);
const I32_MAX = 2 ** 31 - 1;

export const arbU32: fc.Arbitrary<number> = fc.oneof(fc.constantFrom(0, 1, 2 ** 31, U32_MAX), fc.nat({ max: U32_MAX }));
export const arbPosU32: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(1, U32_MAX),
  fc.integer({ min: 1, max: U32_MAX }),
);
/** A UInt64 field as the codec carries it: a non-negative safe integer. */
export const arbU64: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(0, 1, U32_MAX, 2 ** 32, Number.MAX_SAFE_INTEGER),
  fc.maxSafeNat(),
);
export const arbPosU64: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(1, U32_MAX, 2 ** 32, Number.MAX_SAFE_INTEGER),
  fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
);
/** An Int64 field as the codec carries it: a safe integer. */
export const arbI64: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(Number.MIN_SAFE_INTEGER, -(2 ** 32), -1, 0, I32_MAX, 2 ** 32, Number.MAX_SAFE_INTEGER),
  fc.maxSafeInteger(),
);
export const arbI32: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(I32_MIN, -1, 0, I32_MAX),
  fc.integer({ min: I32_MIN, max: I32_MAX }),
);
/** Any double: NaN, -0 and the infinities included (a Float64 field keeps them all). */
export const arbF64: fc.Arbitrary<number> = fc.double();

// ---- texts ----

/** A long text (some hundred to some ten thousand characters), unicode included. */
const arbLongText: fc.Arbitrary<string> = fc
  .tuple(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 4 }), fc.integer({ min: 100, max: 12_000 }))
  .map(([s, n]) => s.repeat(n));

/** Any text: empty, ASCII, unicode graphemes, control characters (NUL too), now and then a long one. */
export const arbText: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constant(''), weight: 2 },
  { arbitrary: fc.string({ maxLength: 12 }), weight: 4 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 8 }), weight: 3 },
  { arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 8 }), weight: 1 },
  { arbitrary: arbLongText, weight: 1 },
);
/** A nullable Text: null (the pointer is null) or any text, the empty one included. */
export const arbOptText: fc.Arbitrary<string | null> = fc.option(arbText, { nil: null, freq: 3 });
