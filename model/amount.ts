// Resource amounts in the replicated state are integers: fixed-point milli-units (1 unit = 1000
// milli). Fractional rusage is legal (`rusage[mem=0.5]`), and a floating-point sum depends on the
// order it was added in: a controller that adds and releases job by job would hold
// 1.4000000000000004 where one restored from a snapshot rebuilds 1.4, and the same committed
// DispatchFact would run on one and pend on the other. Integer sums below 2^53 are exact and do
// not depend on order, so every amount is converted here, once, before it is added or compared
// (usage.ts, and the leader's scheduler in scheduler/ so that it decides as apply does).
//
// An amount must therefore be a whole number of thousandths, and its milli-units a safe integer.
// The configuration loader and the resreq parser refuse any other (`amountProblem`), so the
// conversion never fails on a validated value. Pure.

/** Milli-units per unit: amounts are counted in thousandths. */
export const MILLI_PER_UNIT = 1000;
/** The largest amount (in units) whose milli-units are a safe integer: 9007199254740.991. */
export const AMOUNT_MAX = Number.MAX_SAFE_INTEGER / MILLI_PER_UNIT;

/** A resource amount that milli-units cannot hold exactly: a bug when it reaches accounting (validation refuses it first). */
export class AmountPrecisionError extends Error {
  override readonly name = 'AmountPrecisionError';
  constructor(
    readonly value: number,
    readonly where: string,
    problem: string,
  ) {
    super(`${where}: ${problem}`);
  }
}

/**
 * Why `value` is not an exact resource amount, or null when it is. The wording names the value;
 * the caller says where it was written.
 */
export function amountProblem(value: number): string | null {
  const milli = Math.round(value * MILLI_PER_UNIT);
  if (!Number.isSafeInteger(milli)) {
    return `the amount ${value} is out of range: resource amounts are counted in thousandths and must lie within ±${AMOUNT_MAX}`;
  }
  // milli / 1000 is the double nearest the decimal milli/1000, the one its text parses to: equal
  // exactly when the value has at most three decimal places.
  if (milli / MILLI_PER_UNIT !== value) {
    return `the amount ${value} has more precision than 0.001: resource amounts are counted in thousandths, write at most 3 decimal places`;
  }
  return null;
}

/** The amount in milli-units (an exact integer); throws AmountPrecisionError naming `where` when it has none. */
export function toMilli(value: number, where: string): number {
  const milli = Math.round(value * MILLI_PER_UNIT);
  if (!Number.isSafeInteger(milli) || milli / MILLI_PER_UNIT !== value)
    throw new AmountPrecisionError(value, where, amountProblem(value) ?? 'not an exact amount');
  return milli === 0 ? 0 : milli; // no -0
}

/** Milli-units back to units, for people (the nearest double to the exact decimal). */
export function fromMilli(milli: number): number {
  return milli / MILLI_PER_UNIT;
}
