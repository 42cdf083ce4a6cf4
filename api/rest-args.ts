// The arguments of a REST request (api/rest-routes.ts): taken from the path, the query and the body
// as the route says, each coerced to the type the operation's zod schema wants, and checked by that
// schema; a bad one is named with where it was.

import { z } from 'zod';
import { OP_ARGS, type Op } from './protocol.js';
import { STALE_PARAM, type RestRoute } from './rest-routes.js';

/** Where a bad value was found: a path parameter, a query parameter, the body, a header. */
export type ParamLocation = 'path' | 'query' | 'body' | 'header';

/** One bad value, named (RFC 9457's example extension `invalid-params`). */
export interface InvalidParam {
  readonly name: string;
  readonly in: ParamLocation;
  readonly reason: string;
}

export type RouteArgs =
  | { readonly ok: true; readonly args: unknown; readonly stale: boolean }
  | { readonly ok: false; readonly invalid: readonly InvalidParam[] };

/** The JSON Schema type of each argument of `op` (to read path and query strings as numbers or booleans). */
const ARG_TYPES = new Map<Op, Record<string, string>>();
function argTypes(op: Op): Record<string, string> {
  let t = ARG_TYPES.get(op);
  if (t === undefined) {
    const js = z.toJSONSchema(OP_ARGS[op], { io: 'input' }) as { properties?: Record<string, { type?: string }> };
    t = Object.fromEntries(Object.entries(js.properties ?? {}).map(([k, v]) => [k, v.type ?? 'string']));
    ARG_TYPES.set(op, t);
  }
  return t;
}

/** A path or query string as the argument's type: `12` → 12, `true` → true; anything else is left for zod to name. */
function coerce(type: string | undefined, text: string): unknown {
  if (type === 'integer' || type === 'number') return /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
  if (type === 'boolean') return text === 'true' ? true : text === 'false' ? false : text;
  return text;
}

/**
 * The operation's arguments from the path parameters, the query and the body, validated with the
 * operation's zod schema; a bad value is named with where it was (`tasks` in the body, `limit` in the query).
 */
export function routeArgs(
  route: RestRoute,
  params: Readonly<Record<string, string>>,
  query: URLSearchParams,
  body: unknown,
): RouteArgs {
  const types = argTypes(route.op);
  const where = new Map<string, ParamLocation>();
  const invalid: InvalidParam[] = [];
  const args: Record<string, unknown> = {};
  let stale = false;
  for (const [name, value] of Object.entries(params)) {
    args[name] = coerce(types[name], value);
    where.set(name, 'path');
  }
  for (const [key, value] of query) {
    const arg = route.query?.[key];
    if (key === STALE_PARAM && route.method === 'GET') stale = value === 'true';
    else if (arg === undefined)
      invalid.push({ name: key, in: 'query', reason: `unknown query parameter; known: ${knownQuery(route)}` });
    else {
      args[arg] = coerce(types[arg], value);
      where.set(arg, 'query');
    }
  }
  if (route.body === 'job') args['job'] = body ?? {};
  else if (route.body === 'args') {
    if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body)))
      invalid.push({ name: '(body)', in: 'body', reason: 'the body must be a JSON object' });
    else
      for (const [k, v] of Object.entries((body ?? {}) as Record<string, unknown>)) {
        if (where.get(k) === 'path') invalid.push({ name: k, in: 'body', reason: `given in the path; leave it out` });
        else args[k] = v;
      }
  }
  if (invalid.length > 0) return { ok: false, invalid };
  const parsed = OP_ARGS[route.op].safeParse(args);
  if (parsed.success) return { ok: true, args: parsed.data, stale };
  return {
    ok: false,
    invalid: parsed.error.issues.slice(0, 10).map((i) => {
      const path = i.path.map(String);
      // A submit's body is the job: `job.tasks` is `tasks` in the body.
      const inBody = route.body === 'job' && path[0] === 'job' ? path.slice(1) : path;
      const top = path[0] ?? '';
      const loc: ParamLocation = where.get(top) ?? 'body';
      return { name: (loc === 'body' ? inBody : path).join('.') || '(body)', in: loc, reason: i.message };
    }),
  };
}

function knownQuery(route: RestRoute): string {
  const names = [...Object.keys(route.query ?? {}), ...(route.method === 'GET' ? [STALE_PARAM] : [])];
  return names.length > 0 ? names.join(', ') : '(none)';
}
