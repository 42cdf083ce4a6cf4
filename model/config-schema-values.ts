// The value types every configuration file's schema (config-schema.ts, config-api-limits-schema.ts,
// preset-schema.ts) is built of: names, durations, sizes, whole numbers (those kept in a Cap'n Proto
// field checked against its range), commands, environment values.

import { z } from 'zod';
import { fieldMax, fieldRangeProblem, type IntFieldType } from './field-ranges.js';

export const NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_.-]{0,62}$/;
export const Name = z
  .string()
  .regex(NAME_PATTERN, {
    error: 'a name starts with a letter and holds only letters, digits, "_", "." and "-" (at most 63 characters)',
  })
  .meta({ description: 'A name: a letter, then letters, digits, "_", "." or "-" (at most 63 characters).' });

export const DURATION_PATTERN = /^(\d+d)?(\d+h)?(\d+m)?(\d+s)?$/;
const DURATION_ERROR = 'expected a duration such as 24h, 90m, 30s or 1h30m (a bare number is seconds)';
export const Duration = z
  .union(
    [
      z.string().regex(DURATION_PATTERN, { error: DURATION_ERROR }).min(2, { error: DURATION_ERROR }),
      z.number().int().nonnegative(),
    ],
    { error: DURATION_ERROR },
  )
  .meta({ description: 'A duration: 24h, 90m, 30s, 1h30m, 2d; a bare integer is seconds.' });

export const SIZE_PATTERN = /^\d+[KMGTP]?(i?B)?$/;
const SIZE_ERROR = 'expected a size such as 128G, 512M or 4096K (binary units; a bare number is bytes)';
export const Size = z
  .union([z.string().regex(SIZE_PATTERN, { error: SIZE_ERROR }), z.number().int().nonnegative()], { error: SIZE_ERROR })
  .meta({ description: 'A size in binary units: 128G, 512M, 4096K; a bare integer is bytes.' });

export const PositiveInt = z.number().int().min(1);
export const NonNegativeInt = z.number().int().min(0);

/**
 * A whole number kept in a Cap'n Proto integer field of a profile (`field`, e.g. `TaskRange.max`):
 * a value outside the field's range is refused naming the field and the range (field-ranges.ts), so
 * the content hash never encodes a truncated value.
 */
export function capnpInt(field: string, type: IntFieldType, min: number, file = 'schema/profile.capnp') {
  const where = `${field} (${file})`;
  return z
    .number()
    .superRefine((v, ctx) => {
      const problem = fieldRangeProblem(v, where, type, min);
      if (problem !== null) ctx.addIssue({ code: 'custom', message: problem, input: v });
    })
    .meta({ type: 'integer', minimum: min, maximum: fieldMax(type) });
}
export const Command = z.string().min(1).meta({ description: 'A shell command line.' });

/** Environment variables by name (a profile's, a preset's): each value a string, number or boolean. */
export const EnvValues = z.record(
  z.string(),
  z.union([z.string(), z.number(), z.boolean()], { error: 'an environment value is a string, number or boolean' }),
);
