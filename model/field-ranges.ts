// The integer ranges of the Cap'n Proto fields that profile and job values are stored in
// (schema/profile.capnp, which the content hash encodes, and schema/facts.capnp, which the log
// carries). Each value is checked against its field where it is written (config build, submit),
// with the field and its range named, so no encoder ever has to truncate one: the canonical
// writer (wire/capnp-canonical.ts) refuses a value that does not fit instead of wrapping it.

export const UINT16_MAX = 0xffff;
export const UINT32_MAX = 0xffff_ffff;
/** A UInt64 field holds what a JavaScript number holds exactly. */
export const UINT64_SAFE_MAX = Number.MAX_SAFE_INTEGER;

export type IntFieldType = 'UInt16' | 'UInt32' | 'UInt64';

const MAX: Readonly<Record<IntFieldType, number>> = {
  UInt16: UINT16_MAX,
  UInt32: UINT32_MAX,
  UInt64: UINT64_SAFE_MAX,
};

/** The largest value a field of this type holds here. */
export function fieldMax(type: IntFieldType): number {
  return MAX[type];
}

/**
 * Why `value` cannot be stored in `field` (e.g. `TaskRange.max` of schema/profile.capnp), naming the
 * value, the field and its range; null when it fits. `min` is the smallest value the field takes
 * for this setting (1 where 0 means "not set").
 */
export function fieldRangeProblem(value: number, field: string, type: IntFieldType, min = 0): string | null {
  const max = MAX[type];
  if (Number.isSafeInteger(value) && value >= min && value <= max) return null;
  const what = Number.isInteger(value) ? String(value) : `${value} (not a whole number)`;
  return `${what} does not fit: ${field} is a ${type}, so it takes a whole number from ${min} to ${max}`;
}
