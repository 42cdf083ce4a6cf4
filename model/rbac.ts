// Access by RBAC permission (brief, "Access by RBAC permission"): roles grant permissions scoped by
// type (queue, app) and values (names or `all`); bindings give roles to users and groups. The one
// bypass is the cluster_admin role. `app:use` is checked against the profile's real name: the
// caller resolves an alias first (resolveProfile) and passes the target.

import { CLUSTER_ADMIN_ROLE, SCOPE_ALL, type ClusterConfig, type Permission } from './config-types.js';
import { resolveProfile } from './profiles.js';

export type AuthzScope = { readonly type: 'queue' | 'app'; readonly value: string };
export type AuthzResult = { readonly allowed: true } | { readonly allowed: false; readonly reason: string };

const ALLOWED: AuthzResult = Object.freeze({ allowed: true });

/** The roles bound to a user, directly or through a group listed for them in users.yaml. */
export function rolesOf(config: ClusterConfig, user: string): string[] {
  const groups = config.users.get(user)?.groups ?? [];
  const out: string[] = [];
  for (const b of config.rbac.bindings) {
    if (b.users.includes(user) || b.groups.some((g) => groups.includes(g))) {
      if (!out.includes(b.role)) out.push(b.role);
    }
  }
  return out;
}

export function authorize(
  config: ClusterConfig,
  user: string,
  permission: Permission,
  scope?: AuthzScope,
): AuthzResult {
  const roles = rolesOf(config, user);
  if (roles.includes(CLUSTER_ADMIN_ROLE)) return ALLOWED;
  for (const name of roles) {
    const role = config.rbac.roles.get(name);
    if (role === undefined) continue;
    for (const g of role.grants) {
      if (g.permission !== permission) continue;
      if (g.scopeType === 'all') return ALLOWED;
      if (scope === undefined) {
        // An unscoped question ("may this user list profiles at all?") is answered by any grant.
        return ALLOWED;
      }
      if (g.scopeType === scope.type && (g.values.includes(SCOPE_ALL) || g.values.includes(scope.value)))
        return ALLOWED;
    }
  }
  const what =
    scope === undefined
      ? permission
      : `${permission} on ${scope.type === 'app' ? 'application profile' : 'queue'} ${scope.value}`;
  return {
    allowed: false,
    reason:
      roles.length === 0
        ? `user ${user} has no role in rbac.yaml, so is not allowed ${what}`
        : `user ${user} (roles: ${roles.join(', ')}) is not allowed ${what}`,
  };
}

/**
 * May `user` see the profile a job or request names (app:view on it)? An alias is judged by its
 * target, a name that is not defined by itself (only an `all` grant or the name itself allows it):
 * so a refusal for a hidden profile and for one that does not exist can be the same answer.
 */
export function mayViewProfile(config: ClusterConfig, user: string, name: string): boolean {
  const r = resolveProfile(config, name);
  return authorize(config, user, 'app:view', { type: 'app', value: r === null ? name : r.profile.name }).allowed;
}
