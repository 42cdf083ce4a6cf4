// loadConfig's rules for users.yaml and rbac.yaml: users and roles unique; each grant's scope fits
// its permission (and names queues that exist; an alias grants on its profile); bindings name a role, and the
// users and groups users.yaml knows (a warning when not).

import type { ConfigFile, Path } from './config-file.js';
import { eachNamed, type Parsed, rawNames, uniqueNames } from './config-parsed.js';
import {
  CLUSTER_ADMIN_ROLE,
  type ClusterConfig,
  type Grant,
  PERMISSION_SCOPE,
  type QueueConfig,
  type RoleConfig,
  SCOPE_ALL,
  type UserConfig,
} from './config-types.js';
import type { ProfilesResult } from './config-profiles.js';

type RbacData = NonNullable<NonNullable<Parsed['rbac.yaml']>['data']>;
type RawUser = NonNullable<NonNullable<NonNullable<Parsed['users.yaml']>['data']>['users'][number]>;
type RawPermission = NonNullable<RbacData['roles'][number]>['permissions'][number];

export function checkUsers(parsed: Parsed): Map<string, UserConfig> | null {
  return eachNamed<RawUser, UserConfig>(parsed['users.yaml'], 'users', 'user', (u) => ({
    name: u.name,
    groups: [...new Set(u.groups ?? [])].sort(),
    passwordHash: u.password,
  }));
}

export function checkRbac(
  parsed: Parsed,
  queues: ReadonlyMap<string, QueueConfig> | null,
  profiles: ProfilesResult | null,
  users: ReadonlyMap<string, UserConfig> | null,
): ClusterConfig['rbac'] | null {
  const p = parsed['rbac.yaml'];
  if (p === undefined) return { roles: new Map(), bindings: [] };
  if (p.data === null) return null;
  const { f, data } = p;
  uniqueNames(f, 'roles', data.roles, 'role');
  const qf = parsed['queues.yaml'];
  const queueNames = queues === null || qf === undefined ? null : rawNames(qf.f, 'queues');
  const roles = new Map<string, RoleConfig>();
  data.roles.forEach((r, i) => {
    if (r === null) return;
    const grants: Grant[] = [];
    r.permissions.forEach((perm, k) => {
      const grant = checkGrant(f, ['roles', i, 'permissions', k], perm, queueNames, profiles);
      if (grant !== null) grants.push(grant);
    });
    if (!roles.has(r.name)) roles.set(r.name, { name: r.name, description: r.description ?? null, grants });
  });
  const roleNames = rawNames(f, 'roles');
  checkBindings(f, data.bindings, roleNames, users, parsed['users.yaml'] !== undefined);
  if (!f.ok) return null;
  return {
    roles,
    bindings: data.bindings.flatMap((b) =>
      b === null ? [] : [{ role: b.role, users: b.users ?? [], groups: b.groups ?? [] }],
    ),
  };
}

/** One permission of a role: its scope checked against the permission, its values against the names. */
function checkGrant(
  f: ConfigFile,
  path: Path,
  perm: RawPermission,
  queueNames: ReadonlySet<string> | null,
  profiles: ProfilesResult | null,
): Grant | null {
  const want = PERMISSION_SCOPE[perm.name];
  const type = perm.type ?? 'all';
  if (want === 'all' && type !== 'all') {
    f.error([...path, 'type'], `${perm.name} is not scoped to a ${type}; leave out type and values`);
    return null;
  }
  if (want !== 'all' && type !== want && type !== 'all') {
    f.error([...path, 'type'], `${perm.name} is scoped by type ${want}, not ${type}`);
    return null;
  }
  const values = want === 'all' ? [] : type === 'all' ? [SCOPE_ALL] : (perm.values ?? []);
  if (want !== 'all' && values.length === 0) {
    f.error(
      [...path, 'values'],
      `${perm.name} with type ${want} needs values: the ${want === 'queue' ? 'queue' : 'profile'} names, or all`,
    );
    return null;
  }
  if (want === 'all' && perm.values !== undefined) {
    f.error([...path, 'values'], `${perm.name} takes no values`);
    return null;
  }
  const resolved = values.map((v, j) =>
    checkScopeValue(f, [...path, 'values', j], perm.name, want, v, queueNames, profiles),
  );
  return {
    permission: perm.name,
    scopeType: want === 'all' ? 'all' : type === 'all' ? want : type,
    values: [...new Set(resolved)],
  };
}

/**
 * One scope value of a grant: a queue that must exist; a profile name, where an alias stands for
 * its target (aliases resolve to their profile everywhere, RBAC included: the rename workflow,
 * rename the profile and keep the old name as an alias, needs no rbac.yaml edit in the same
 * upgrade) and a name that is not defined is a harmless grant. Both are warned about.
 */
function checkScopeValue(
  f: ConfigFile,
  vp: Path,
  permission: string,
  want: 'queue' | 'app' | 'all',
  v: string,
  queueNames: ReadonlySet<string> | null,
  profiles: ProfilesResult | null,
): string {
  if (v === SCOPE_ALL) return v;
  if (want === 'queue' && queueNames !== null && !queueNames.has(v))
    f.error(vp, `${permission} names queue ${v}, which is not defined in queues.yaml`);
  if (want !== 'app' || profiles === null) return v;
  const target = profiles.aliases.get(v);
  if (target !== undefined) {
    f.warning(
      vp,
      `${permission} names ${v}, an alias of profile ${target}: it grants ${permission} on ${target}; name ${target} here before you drop the alias`,
    );
    return target;
  }
  // A warning, not an error: a grant on a removed profile is harmless, and a profile removal or
  // rename must not need an rbac.yaml edit in the same upgrade.
  if (!profiles.names.has(v))
    f.warning(
      vp,
      `${permission} names application profile ${v}, which is not defined in applications.yaml (the grant has no effect)`,
    );
  return v;
}

/** Each binding names a defined role and someone; users and groups users.yaml does not know are warned about. */
function checkBindings(
  f: ConfigFile,
  bindings: RbacData['bindings'],
  roleNames: ReadonlySet<string>,
  users: ReadonlyMap<string, UserConfig> | null,
  usersFile: boolean,
): void {
  const knownGroups = new Set<string>();
  for (const u of users?.values() ?? []) for (const g of u.groups) knownGroups.add(g);
  bindings.forEach((b, i) => {
    if (b === null) return;
    const path: Path = ['bindings', i];
    if (!roleNames.has(b.role) && b.role !== CLUSTER_ADMIN_ROLE)
      f.error([...path, 'role'], `binding names role ${b.role}, which is not defined in roles`);
    if ((b.users ?? []).length + (b.groups ?? []).length === 0)
      f.error(path, `binding of role ${b.role} names no users and no groups`);
    if (users !== null && usersFile) {
      (b.users ?? []).forEach((u, k) => {
        if (!users.has(u))
          f.warning([...path, 'users', k], `binding of role ${b.role} names user ${u}, who is not in users.yaml`);
      });
      (b.groups ?? []).forEach((g, k) => {
        if (!knownGroups.has(g))
          f.warning(
            [...path, 'groups', k],
            `binding of role ${b.role} names group ${g}, which no user in users.yaml belongs to`,
          );
      });
    }
  });
}
