// The REST API's errors: JSON problem details (RFC 9457, `application/problem+json`). Every
// error code of the client API (api/protocol.ts ErrorCode) has one HTTP status and one title; the
// detail is the operation's own message (it names the field, the permission or the profile value).

import type { ServerResponse } from 'node:http';
import type { ApiErrorBody, ErrorCode } from '../../api/protocol.js';
import type { InvalidParam } from '../../api/rest-args.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** The problem kinds of the REST API only (the transport's own refusals). */
export type RestProblemCode =
  | 'bad-json'
  | 'body-too-large'
  | 'unsupported-media-type'
  | 'method-not-allowed'
  | 'no-route'
  | 'bad-idempotency-key'
  | 'busy'
  | 'leader-unreachable';

export type ProblemCode = ErrorCode | RestProblemCode;

const KINDS: Record<ProblemCode, { status: number; title: string }> = {
  'bad-frame': { status: 400, title: 'Bad request' },
  'bad-request': { status: 400, title: 'Bad request' },
  'bad-json': { status: 400, title: 'The body is not JSON' },
  'bad-idempotency-key': { status: 400, title: 'Bad Idempotency-Key header' },
  'unknown-op': { status: 404, title: 'Unknown operation' },
  'no-route': { status: 404, title: 'No such route' },
  unauthenticated: { status: 401, title: 'Missing or invalid token' },
  forbidden: { status: 403, title: 'Not allowed' },
  'not-found': { status: 404, title: 'Not found' },
  'method-not-allowed': { status: 405, title: 'Method not allowed' },
  'body-too-large': { status: 413, title: 'Body too large' },
  'unsupported-media-type': { status: 415, title: 'The body must be application/json' },
  rejected: { status: 422, title: 'Refused' },
  'rate-limited': { status: 429, title: 'Too many requests' },
  internal: { status: 500, title: 'Internal error' },
  'not-leader': { status: 503, title: 'Not the leader' },
  'no-leader': { status: 503, title: 'No leader' },
  unavailable: { status: 503, title: 'Unavailable' },
  busy: { status: 503, title: 'Too many requests in flight' },
  'leader-unreachable': { status: 503, title: 'The leader could not be reached' },
};

/** `urn:xce:problem:forbidden`: a stable, dereference-free URI per kind (RFC 9457 `type`). */
export function problemType(code: ProblemCode): string {
  return `urn:xce:problem:${code}`;
}

export function problemStatus(code: ProblemCode): number {
  return KINDS[code].status;
}

export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  /** The client API's error code (the same as the WebSocket API's). */
  readonly code: ProblemCode;
  /** The request's path. */
  readonly instance: string;
  /** With 403: the permission refused (`queue:submit`). */
  readonly permission?: string;
  /** With 400: each bad value, named with where it was. */
  readonly invalidParams?: readonly InvalidParam[];
  /** With `not-leader`: the leader. */
  readonly leader?: { readonly id: number; readonly address: string };
  readonly retryAfter_ms?: number;
}

/** `user bob (roles: basic_user) is not allowed queue:submit on queue night` → `queue:submit`. */
function permissionOf(message: string): string | undefined {
  return /is not allowed ([a-z_]+:[a-z_]+)/.exec(message)?.[1];
}

export function problem(
  code: ProblemCode,
  detail: string,
  instance: string,
  extra: Pick<Problem, 'invalidParams' | 'leader' | 'retryAfter_ms'> = {},
): Problem {
  const k = KINDS[code];
  const permission = code === 'forbidden' ? permissionOf(detail) : undefined;
  return {
    type: problemType(code),
    title: k.title,
    status: k.status,
    detail,
    code,
    instance,
    ...(permission !== undefined ? { permission } : {}),
    ...extra,
  };
}

/** The problem for an error answer of the client API. */
export function problemOfError(e: ApiErrorBody, instance: string): Problem {
  return problem(e.code, e.message, instance, {
    ...(e.leader !== undefined ? { leader: e.leader } : {}),
    ...(e.retryAfter_ms !== undefined ? { retryAfter_ms: e.retryAfter_ms } : {}),
  });
}

/** Writes `p` (with Retry-After for 429 and 503, WWW-Authenticate for 401). */
export function sendProblem(res: ServerResponse, p: Problem, headers: Record<string, string> = {}): void {
  const h: Record<string, string> = { 'content-type': PROBLEM_CONTENT_TYPE, ...headers };
  if (p.status === 401) h['www-authenticate'] = 'Bearer realm="xce"';
  if (p.status === 429 || p.status === 503)
    h['retry-after'] = String(Math.max(1, Math.ceil((p.retryAfter_ms ?? 1000) / 1000)));
  const body = JSON.stringify(p);
  h['content-length'] = String(Buffer.byteLength(body));
  res.writeHead(p.status, h).end(body);
}
