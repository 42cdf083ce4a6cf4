// The frames of `peek` on the worker wire (`/worker`, worker-protocol.ts): the leader asks the
// worker of a running job's head host for a piece of its stdout (`xcecli jobs peek`), and the
// worker answers with it (daemon/worker/peek.ts reads it).

import { z } from 'zod';
import { PEEK_BYTES_MAX } from '../api/protocol.js';
import { count, hostName, jobId, reason, run, text } from './worker-fields.js';

/** The answer to a `peek`: a piece of the job's stdout file, as base64 (bytes, not cut at characters). */
export const PeekDataFrame = z.strictObject({
  type: z.literal('peek-data'),
  host: hostName,
  /** The `peek`'s requestId. */
  requestId: count,
  jobId,
  run,
  /** `ok`: `data` holds the bytes from `offset`; `unknown`: the run is not running here; `error`: `reason` says why. */
  outcome: z.enum(['ok', 'unknown', 'error']),
  /** The stdout file (absolute). */
  path: text.optional(),
  /** Where `data` starts in the file. */
  offset: count.optional(),
  /** The file's size when it was read. */
  size: count.optional(),
  data: z
    .string()
    .max(Math.ceil(PEEK_BYTES_MAX / 3) * 4)
    .optional(),
  reason: reason.optional(),
});

/** Asks for a piece of a running job's stdout (`xcecli jobs peek`); the worker answers `peek-data`. */
export const PeekFrame = z.strictObject({
  type: z.literal('peek'),
  requestId: count,
  jobId,
  run,
  /** Where to start reading; absent: the last `maxBytes` of the file. */
  offset: count.optional(),
  maxBytes: z.number().int().positive().max(PEEK_BYTES_MAX),
});
