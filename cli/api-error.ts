// The client library's error: the controller's error code (api/protocol.ts ErrorCode) or one of
// the client's own (`timeout`, `unreachable`, `closed`), and the codes after which the library
// sends the same request again.

import type { ErrorCode } from '../api/protocol.js';

export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly code: ErrorCode | 'timeout' | 'unreachable' | 'closed',
    message: string,
  ) {
    super(message);
  }
}

/**
 * No connection or no answer within the time the attempt had: it says less than a failure that
 * named its cause (a refused certificate, a controller's own answer), so the client reports that
 * one at its deadline rather than this.
 */
export class WaitedOut extends ApiError {}

/**
 * Codes after which the same request may be sent again (to another controller): leadership
 * changes, overload, a controller that cannot serve now. Never `rejected`: it is a permanent
 * answer (a refused membership change, an invalid job, ...), and the same request gets it again.
 */
export const RETRYABLE_CODES: ReadonlySet<string> = new Set([
  'not-leader',
  'no-leader',
  'unavailable',
  'timeout',
  'unreachable',
  'rate-limited',
]);
