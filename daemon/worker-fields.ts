// The field schemas the worker wire contract (worker-protocol.ts) and its peek frames
// (worker-peek-frames.ts) share: host names, names, job texts, ids, counts, reasons, times.

import { z } from 'zod';
import { JobTextSchema, NAME_CHARS_MAX } from '../model/job-limits.js';

/** A `reason` longer than this is cut (it ends up in `jobs show`). */
export const REASON_BYTES_MAX = 2048;

export const hostName = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'a host name: letters, digits, dot, dash, underscore');
export const name = z.string().min(1).max(NAME_CHARS_MAX);
/** A job's text values, env names and counts: the client API enforces the same limits at submit (model/job-limits.ts). */
export const text = JobTextSchema;
export const jobId = z.number().int().positive();
export const run = z.number().int().positive();
export const count = z.number().int().nonnegative();
export const reason = z.string().max(REASON_BYTES_MAX);
export const time_ms = z.number().int().nonnegative();
