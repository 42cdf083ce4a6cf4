// The REST API's route table (`/v1/...` on the controllers' port): each route names the client API
// operation it calls (the same operations, schemas and RBAC as the WebSocket API), where that
// operation's arguments come from (path, query, body), and what it needs. The daemon serves these
// routes (daemon/rest-server.ts) and the OpenAPI document is generated from them (api/openapi.ts),
// so the two cannot drift apart.

import { z } from 'zod';
import { OP_ARGS, WRITE_OPS, type Op } from './protocol.js';

export type RestMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface RestRoute {
  readonly method: RestMethod;
  /** `/v1/jobs/{id}`: `{name}` segments are path parameters, each one argument of the operation. */
  readonly path: string;
  readonly op: Op;
  readonly summary: string;
  /** The OpenAPI tag (the page's sections). */
  readonly tag: 'auth' | 'jobs' | 'apps' | 'cluster' | 'admin';
  /**
   * What the JSON body holds: `args`, the operation's arguments (less the path parameters);
   * `job`, a job's own values (the argument `job` of jobs.submit); absent: no body.
   */
  readonly body?: 'args' | 'job';
  /** Query parameters → the argument each sets (`dry_run` → `dryRun`). */
  readonly query?: Readonly<Record<string, string>>;
  /** Who may call it, as the operation checks it (for the document; the operation decides). */
  readonly needs: string;
  /**
   * A read only the leader answers in full (lag per member, which hosts a worker serves): a
   * follower forwards it to the leader unless the query says `stale=true` (this node's own view).
   */
  readonly leaderRead?: true;
}

/** A query parameter of every read: a possibly stale read from this node instead of a linearizable one. */
export const STALE_PARAM = 'stale';

/** The header that carries a write's session, `<client>:<seq>` (api/protocol.ts Session). */
export const IDEMPOTENCY_HEADER = 'idempotency-key';

export const REST_ROUTES: readonly RestRoute[] = [
  {
    method: 'POST',
    path: '/v1/auth/login',
    op: 'login',
    summary: 'Log in with a password of users.yaml; answers a bearer token (JWT)',
    tag: 'auth',
    body: 'args',
    needs: 'no token',
  },
  {
    method: 'GET',
    path: '/v1/jobs',
    op: 'jobs.list',
    summary: 'List jobs, newest first (your own; everyone’s with job:view)',
    tag: 'jobs',
    query: { state: 'state', user: 'user', app: 'app', queue: 'queue', limit: 'limit' },
    needs: 'a token; job:view for other users’ jobs',
  },
  {
    method: 'POST',
    path: '/v1/jobs',
    op: 'jobs.submit',
    summary: 'Submit a job (or, with dry_run=true, show what it would run with)',
    tag: 'jobs',
    body: 'job',
    query: { dry_run: 'dryRun' },
    needs: 'queue:submit on the queue and app:use on the profile',
  },
  {
    method: 'GET',
    path: '/v1/jobs/{id}',
    op: 'jobs.show',
    summary: 'One job: its profile with origins, effective values, frozen dispatch record',
    tag: 'jobs',
    needs: 'a token; job:view for another user’s job',
  },
  {
    method: 'GET',
    path: '/v1/jobs/{id}/history',
    op: 'jobs.history',
    summary: 'One job’s events (submitted, dispatched, started, finished, requeued), also once it left the state',
    tag: 'jobs',
    needs: 'a token; job:view for another user’s job',
  },
  {
    method: 'GET',
    path: '/v1/accounting',
    op: 'accounting.report',
    summary: 'Job counts, CPU·hours and wall·hours of the jobs that ended in [since_ms, until_ms) (like bacct)',
    tag: 'jobs',
    query: { since_ms: 'sinceMs', until_ms: 'untilMs', by: 'by' },
    needs: 'job:view',
  },
  ...(['kill', 'requeue', 'restart'] as const).map((action): RestRoute => ({
    method: 'POST',
    path: `/v1/jobs/{id}/${action}`,
    op: `jobs.${action}`,
    summary: `${action[0]!.toUpperCase()}${action.slice(1)} a job`,
    tag: 'jobs',
    needs:
      action === 'kill'
        ? 'your own job, or job:control'
        : 'your own job or job:control, and queue:submit and app:use as a new submit',
  })),
  {
    method: 'GET',
    path: '/v1/apps',
    op: 'apps.list',
    summary: 'The application profiles you may view, with whether you may use each',
    tag: 'apps',
    needs: 'a token (lists what app:view allows)',
  },
  {
    method: 'GET',
    path: '/v1/apps/{name}',
    op: 'apps.show',
    summary: 'One application profile’s values (name or alias)',
    tag: 'apps',
    needs: 'app:view on the profile',
  },
  {
    method: 'GET',
    path: '/v1/presets',
    op: 'presets.list',
    summary: 'The site presets you may see (those naming a profile you may not view are left out)',
    tag: 'apps',
    needs: 'a token',
  },
  {
    method: 'GET',
    path: '/v1/presets/{name}',
    op: 'presets.get',
    summary: 'One site preset: its values and its file',
    tag: 'apps',
    needs: 'a token; app:view on the profile it names',
  },
  {
    method: 'GET',
    path: '/v1/cluster/status',
    op: 'cluster.status',
    summary: 'Raft members, leader, term, indexes, lag, jobs per state (the leader’s view; stale=true: this node’s)',
    tag: 'cluster',
    leaderRead: true,
    needs: 'cluster:view or cluster:admin',
  },
  {
    method: 'GET',
    path: '/v1/cluster/hosts',
    op: 'hosts.list',
    summary: 'The hosts of hosts.yaml: slots used and total, whether a worker serves each (asked of the leader)',
    tag: 'cluster',
    leaderRead: true,
    needs: 'a token',
  },
  {
    method: 'POST',
    path: '/v1/cluster/transfer-leader',
    op: 'cluster.transferLeader',
    summary: 'Hand leadership to another voter',
    tag: 'admin',
    body: 'args',
    needs: 'cluster:admin',
  },
  {
    method: 'POST',
    path: '/v1/cluster/members',
    op: 'cluster.addMember',
    summary: 'Add a controller (as a learner, or a voter)',
    tag: 'admin',
    body: 'args',
    needs: 'cluster:admin',
  },
  {
    method: 'DELETE',
    path: '/v1/cluster/members/{id}',
    op: 'cluster.removeMember',
    summary: 'Remove a controller from the cluster',
    tag: 'admin',
    needs: 'cluster:admin',
  },
  {
    method: 'POST',
    path: '/v1/config',
    op: 'config.upgrade',
    summary: 'Replace the configuration files (validated whole, replicated)',
    tag: 'admin',
    body: 'args',
    needs: 'cluster:admin',
  },
  {
    method: 'POST',
    path: '/v1/tokens',
    op: 'token.issue',
    summary: 'Issue a token for a user (a portal or service account)',
    tag: 'admin',
    body: 'args',
    needs: 'cluster:admin',
  },
  {
    method: 'POST',
    path: '/v1/tokens/revoked',
    op: 'token.revoke',
    summary: 'Revoke a token (given whole, or by its jti) on every controller until it expires',
    tag: 'admin',
    body: 'args',
    needs: 'cluster:admin',
  },
  {
    method: 'POST',
    path: '/v1/cluster/hosts/{host}/credential',
    op: 'hosts.enroll',
    summary: "A host's credential for its xcecd (a revoked host gets one of its next epoch)",
    tag: 'admin',
    needs: 'cluster:admin',
  },
  {
    method: 'DELETE',
    path: '/v1/cluster/hosts/{host}/credential',
    op: 'hosts.revoke',
    summary: "Revoke a host: every controller refuses it and drops its worker's connection",
    tag: 'admin',
    needs: 'cluster:admin',
  },
  {
    method: 'GET',
    path: '/v1/roles',
    op: 'roles.list',
    summary: 'The roles and bindings of rbac.yaml in force',
    tag: 'admin',
    needs: 'cluster:admin',
  },
  {
    method: 'PUT',
    path: '/v1/roles/{name}',
    op: 'roles.set',
    summary: 'Create or replace a role',
    tag: 'admin',
    body: 'args',
    needs: 'cluster:admin',
  },
  {
    method: 'DELETE',
    path: '/v1/roles/{name}',
    op: 'roles.delete',
    summary: 'Delete a role',
    tag: 'admin',
    needs: 'cluster:admin',
  },
];

/** The document itself: served by the REST server, listed in the document. */
export const OPENAPI_PATH = '/v1/openapi.json';

/** A route's path parameters, in order (`/v1/jobs/{id}/kill` → `['id']`). */
export function pathParams(route: RestRoute): string[] {
  return [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
}

export function isWrite(route: RestRoute): boolean {
  return WRITE_OPS.has(route.op);
}

/** The routes, each with the regular expression of its path. */
const COMPILED = REST_ROUTES.map((route) => ({
  route,
  re: new RegExp(`^${route.path.replace(/\{(\w+)\}/g, '([^/]+)')}$`),
}));

export type RouteMatch =
  | { readonly kind: 'route'; readonly route: RestRoute; readonly params: Readonly<Record<string, string>> }
  /** The path exists with other methods. */
  | { readonly kind: 'method'; readonly allowed: readonly RestMethod[] }
  | { readonly kind: 'none' };

export function matchRoute(method: string, path: string): RouteMatch {
  const allowed: RestMethod[] = [];
  for (const { route, re } of COMPILED) {
    const m = re.exec(path);
    if (m === null) continue;
    if (route.method !== method) {
      allowed.push(route.method);
      continue;
    }
    const params: Record<string, string> = {};
    pathParams(route).forEach((name, i) => {
      params[name] = decodeURIComponent(m[i + 1]!);
    });
    return { kind: 'route', route, params };
  }
  return allowed.length > 0 ? { kind: 'method', allowed } : { kind: 'none' };
}

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
