// The REST API's route table (`/v1/...` on the controllers' port): each route names the client API
// operation it calls (the same operations, schemas and RBAC as the WebSocket API), where that
// operation's arguments come from (path, query, body), and what it needs. The daemon serves these
// routes (daemon/rest-server.ts) and the OpenAPI document is generated from them (api/openapi.ts),
// so the two cannot drift apart.

import { WRITE_OPS, type Op } from './protocol.js';

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
  ...(['hold', 'release', 'suspend', 'resume'] as const).map((action): RestRoute => ({
    method: 'POST',
    path: `/v1/jobs/{id}/${action}`,
    op: `jobs.${action}`,
    summary:
      action === 'hold' || action === 'release'
        ? `${action === 'hold' ? 'Hold' : 'Release'} a pending job (bstop/bresume of a pending job)`
        : `${action === 'suspend' ? 'Suspend (SIGSTOP)' : 'Resume (SIGCONT)'} a running job`,
    tag: 'jobs',
    needs: 'your own job, or job:control',
  })),
  {
    method: 'POST',
    path: '/v1/jobs/{id}/modify',
    op: 'jobs.modify',
    summary: 'Change a pending job’s values (bmod), admitted as a submit would be',
    tag: 'jobs',
    body: 'args',
    needs: 'your own job or job:control, and queue:submit and app:use as a new submit',
  },
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
    path: '/v1/jobs/{id}/peek',
    op: 'jobs.peek',
    summary: 'A piece of a running job’s stdout, read by its worker (bpeek); the last max_bytes without offset',
    tag: 'jobs',
    query: { offset: 'offset', max_bytes: 'maxBytes' },
    needs: 'your own job, or job:view',
  },
  ...(['close', 'open'] as const).map((action): RestRoute => ({
    method: 'POST',
    path: `/v1/hosts/{name}/${action}`,
    op: `hosts.${action}`,
    summary: action === 'close' ? 'Close a host: it gets no new jobs (a reason may be given)' : 'Open a closed host',
    tag: 'admin',
    ...(action === 'close' ? { body: 'args' as const } : {}),
    needs: 'cluster:admin',
  })),
  {
    method: 'GET',
    path: '/v1/queues',
    op: 'queues.list',
    summary: 'The queues with their priority and job counts (like bqueues)',
    tag: 'cluster',
    needs: 'a token',
  },
  {
    method: 'GET',
    path: '/v1/queues/{name}',
    op: 'queues.show',
    summary: 'One queue with its priority, job counts and whether you may submit to it',
    tag: 'cluster',
    needs: 'a token',
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
