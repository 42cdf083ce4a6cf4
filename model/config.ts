// loadConfig: a directory's worth of configuration file texts → a validated ClusterConfig, or every
// error and warning, each naming the file, the entry and the field (line:column where the YAML
// gives them). Pure: `xceadmin config build`, a live upgrade and the controller's start all read
// the files themselves and call this, so all three apply exactly the same rules.
//
// Errors (the configuration is refused): YAML syntax; unknown keys; wrong types; a mode other than
// direct; bad units; resreq syntax and unknown resources; XCE_* in a profile's env; duplicate names;
// alias clashes and chains; a default_application that names an alias or no profile; dangling
// references (queues, profiles and roles named in rbac.yaml; resources named by hosts); a host
// numeric, pool total or rusage amount finer than 0.001 or too large (amount.ts).
// Warnings (accepted): a queue still setting res_req / pre_exec / post_exec (deprecated: they
// belong in an application profile); role bindings naming users or groups users.yaml does not
// know; an even number of controllers.

import { amountProblem } from './amount.js';
import { ConfigFile, type Path } from './config-file.js';
import { CONFIG_FILE_NAMES, FILE_SCHEMAS, ProfileSchema, type ConfigFileName } from './config-schema.js';
import {
  CLUSTER_ADMIN_ROLE,
  DEFAULT_PROFILE_NAME,
  PERMISSION_SCOPE,
  SCOPE_ALL,
  type ClusterConfig,
  type ClusterSection,
  type ConfigLoadResult,
  type Diagnostic,
  type Grant,
  type HostConfig,
  type QueueConfig,
  type ResourceConfig,
  type RoleConfig,
  type UserConfig,
} from './config-types.js';
import { buildProfile, builtinDefaultProfile, resReqAt, sizeAt, type RawProfile } from './profile-config.js';
import type { Profile } from './profile-types.js';
import { BUILTIN_HOST_RESOURCES, type ResourceRef } from './resreq.js';

export interface ConfigFileText {
  /** Any path; only its base name matters (`configs/applications.yaml` → `applications.yaml`). */
  readonly path: string;
  readonly text: string;
}

const REQUIRED_FILES: readonly ConfigFileName[] = ['xce.yaml', 'queues.yaml'];

export function baseName(path: string): string {
  const i = Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\'));
  return i < 0 ? path : path.slice(i + 1);
}

/** A file's data after validation: a list entry that failed its own check is a null hole (indices keep pointing at the YAML). */
type Holey<T> = { [K in keyof T]: T[K] extends ReadonlyArray<infer E> ? Array<E | null> : T[K] };
type Parsed = {
  [K in ConfigFileName]?: { f: ConfigFile; data: Holey<ReturnType<(typeof FILE_SCHEMAS)[K]['parse']>> | null };
};

/** The `name` of every entry of a top-level list as written, valid or not (so a broken entry still counts as defined). */
function rawNames(f: ConfigFile, listKey: string): Set<string> {
  const v = f.value() as Record<string, unknown> | null;
  const list = v !== null && typeof v === 'object' ? v[listKey] : null;
  const out = new Set<string>();
  if (Array.isArray(list))
    for (const e of list)
      if (e !== null && typeof e === 'object' && typeof (e as { name?: unknown }).name === 'string')
        out.add((e as { name: string }).name);
  return out;
}

export function loadConfig(files: ReadonlyArray<ConfigFileText>): ConfigLoadResult {
  const top: Diagnostic[] = [];
  const byName = new Map<ConfigFileName, ConfigFile>();
  for (const { path, text } of files) {
    const name = baseName(path);
    if (!(CONFIG_FILE_NAMES as readonly string[]).includes(name)) {
      top.push({
        severity: 'warning',
        file: name,
        message: `${name} is not a file XCE reads (${CONFIG_FILE_NAMES.join(', ')}); it is ignored`,
      });
      continue;
    }
    if (byName.has(name as ConfigFileName)) {
      top.push({ severity: 'error', file: name, message: `${name} is given twice` });
      continue;
    }
    byName.set(name as ConfigFileName, new ConfigFile(name, text));
  }
  for (const req of REQUIRED_FILES) {
    if (!byName.has(req)) top.push({ severity: 'error', file: req, message: `${req} is missing; it is required` });
  }

  const parsed: Parsed = {};
  for (const name of CONFIG_FILE_NAMES) {
    const f = byName.get(name);
    if (f === undefined) continue;
    // Each file's shape is independent of the others: check them all, then cross-references.
    (parsed as Record<string, unknown>)[name] = { f, data: f.validate(FILE_SCHEMAS[name] as never) };
  }

  const resources = checkResources(parsed);
  const resourceRefs: ReadonlyMap<string, ResourceRef> | null = resources;
  const profilesResult = checkApplications(parsed, resourceRefs);
  const cluster = checkXce(parsed, profilesResult);
  const queues = checkQueues(parsed, resourceRefs);
  const hosts = checkHosts(parsed, resources);
  const users = checkUsers(parsed);
  const rbac = checkRbac(parsed, queues, profilesResult, users);

  const all: Diagnostic[] = [...top];
  for (const name of CONFIG_FILE_NAMES) {
    const p = parsed[name];
    // Within a file, in the order of the text (diagnostics without a position first).
    if (p !== undefined)
      all.push(
        ...[...p.f.diagnostics].sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0)),
      );
  }
  const errors = all.filter((d) => d.severity === 'error');
  const warnings = all.filter((d) => d.severity === 'warning');
  if (
    errors.length > 0 ||
    cluster === null ||
    profilesResult === null ||
    queues === null ||
    hosts === null ||
    resources === null ||
    rbac === null ||
    users === null
  ) {
    if (errors.length === 0) throw new Error('loadConfig: a section failed without an error diagnostic'); // invariant
    return { ok: false, errors, warnings };
  }
  const config: ClusterConfig = {
    cluster,
    profiles: profilesResult.profiles,
    aliases: profilesResult.aliases,
    queues,
    hosts,
    resources,
    rbac,
    users,
  };
  return { ok: true, config, warnings };
}

/** Reports each name used twice in a top-level list; returns the first index of each name. */
function uniqueNames(
  f: ConfigFile,
  listKey: string,
  items: ReadonlyArray<{ name: string } | null>,
  what: string,
): Map<string, number> {
  const seen = new Map<string, number>();
  items.forEach((item, i) => {
    if (item === null) return;
    const first = seen.get(item.name);
    if (first !== undefined) {
      f.error(
        [listKey, i, 'name'],
        `${what} "${item.name}" is defined twice (first as entry ${first + 1}); names must be unique`,
      );
    } else seen.set(item.name, i);
  });
  return seen;
}

// ---- resources.yaml ----

function checkResources(parsed: Parsed): Map<string, ResourceConfig> | null {
  const p = parsed['resources.yaml'];
  const out = new Map<string, ResourceConfig>();
  if (p === undefined) return out;
  if (p.data === null) return null;
  const { f, data } = p;
  uniqueNames(f, 'resources', data.resources, 'resource');
  data.resources.forEach((r, i) => {
    if (r === null || out.has(r.name)) return;
    const path: Path = ['resources', i];
    if (BUILTIN_HOST_RESOURCES.has(r.name)) {
      f.error(
        [...path, 'name'],
        `resource "${r.name}" is built in (every worker reports it); remove it from resources.yaml`,
      );
      return;
    }
    const scope = r.scope ?? 'host';
    if (scope === 'cluster') {
      if (r.type !== 'numeric')
        f.error([...path, 'type'], `a cluster-scope (shared) resource must be numeric, with a total`);
      if (r.total === undefined)
        f.error(
          [...path, 'scope'],
          `a cluster-scope (shared) resource needs a total (the size of the pool, e.g. the license count)`,
        );
    } else if (r.total !== undefined) {
      f.error(
        [...path, 'total'],
        `total applies to cluster-scope resources only; a host resource's amount is set per host in hosts.yaml`,
      );
    }
    const totalProblem = r.total === undefined ? null : amountProblem(r.total);
    if (totalProblem !== null) f.error([...path, 'total'], totalProblem);
    out.set(r.name, { name: r.name, type: r.type, scope, total: r.total ?? null, description: r.description ?? null });
  });
  return out;
}

// ---- applications.yaml ----

interface ProfilesResult {
  readonly profiles: Map<string, Profile>;
  readonly aliases: Map<string, string>;
  /** Whether applications.yaml exists (without it the cluster has only the built-in `default`). */
  readonly fromFile: boolean;
  /** Every profile name written in the file, including entries with errors (for reference checks). */
  readonly names: ReadonlySet<string>;
}

function checkApplications(parsed: Parsed, resources: ReadonlyMap<string, ResourceRef> | null): ProfilesResult | null {
  const p = parsed['applications.yaml'];
  if (p === undefined) {
    return {
      profiles: new Map([[DEFAULT_PROFILE_NAME, builtinDefaultProfile(DEFAULT_PROFILE_NAME)]]),
      aliases: new Map(),
      fromFile: false,
      names: new Set([DEFAULT_PROFILE_NAME]),
    };
  }
  if (p.data === null) return null;
  const { f, data } = p;
  // An entry whose shape is wrong is still checked without its bad keys (so a wrong `mode` does
  // not hide a resreq syntax error in the same entry); it never becomes a profile.
  const apps = data.applications.map((raw, i) => (raw !== null ? raw : salvageEntry(f, i)));
  uniqueNames(f, 'applications', apps, 'application profile');
  const profiles = new Map<string, Profile>();
  apps.forEach((raw, i) => {
    if (raw === null) return;
    const profile = buildProfile(f, ['applications', i], raw, resources);
    if (profile !== null && data.applications[i] !== null && !profiles.has(profile.name))
      profiles.set(profile.name, profile);
  });

  // Aliases: each resolves to exactly one real profile, in one step.
  const names = rawNames(f, 'applications');
  const aliasOwner = new Map<string, string>(); // alias → the profile listing it
  const aliases = new Map<string, string>();
  apps.forEach((raw, i) => {
    if (raw === null) return;
    (raw.aliases ?? []).forEach((alias, k) => {
      const path: Path = ['applications', i, 'aliases', k];
      if (alias === raw.name) {
        f.error(path, `alias "${alias}" of profile ${raw.name} is the profile's own name; remove it`);
      } else if (names.has(alias)) {
        const chained = apps.find((a) => a !== null && a.name === alias && (a.aliases ?? []).length > 0);
        f.error(
          path,
          `alias "${alias}" of profile ${raw.name} clashes with profile ${alias}: an alias cannot have a profile's name` +
            (chained !== undefined
              ? `; this would make an alias chain (${alias} has aliases of its own); aliases must name a profile directly`
              : ''),
        );
      } else if (aliasOwner.has(alias)) {
        const owner = aliasOwner.get(alias) as string;
        f.error(
          path,
          owner === raw.name
            ? `alias "${alias}" is listed twice in profile ${raw.name}`
            : `alias "${alias}" of profile ${raw.name} clashes with alias ${alias} of profile ${owner}: an alias resolves to one profile`,
        );
      } else {
        aliasOwner.set(alias, raw.name);
        aliases.set(alias, raw.name);
      }
    });
  });
  // An alias whose owner is itself listed as an alias elsewhere is a chain (X → A → B).
  for (const [alias, owner] of aliasOwner) {
    for (const other of apps) {
      if (other !== null && (other.aliases ?? []).includes(owner)) {
        const i = apps.findIndex((a) => a !== null && a.name === owner);
        const k = (apps[i]?.aliases ?? []).indexOf(alias);
        f.error(
          ['applications', i, 'aliases', k],
          `alias chain: ${alias} → ${owner} → ${other.name}; ${owner} is itself an alias of ${other.name}, so point ${alias} at ${other.name} directly`,
        );
      }
    }
  }
  return { profiles, aliases, fromFile: true, names };
}

/** A profile entry with its shape errors (already reported) removed, or null when nothing is left to check. */
function salvageEntry(f: ConfigFile, i: number): RawProfile | null {
  const raw = (f.value() as { applications?: unknown[] } | null)?.applications?.[i];
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const first = ProfileSchema.safeParse(raw);
  if (first.success) return first.data;
  const bad = new Set<string>();
  for (const issue of first.error.issues) {
    if (issue.code === 'unrecognized_keys' && issue.path.length === 0) for (const k of issue.keys) bad.add(k);
    else if (issue.path.length > 0) bad.add(String(issue.path[0]));
  }
  if (bad.has('name')) return null;
  const rest = Object.fromEntries(Object.entries(raw).filter(([k]) => !bad.has(k)));
  const second = ProfileSchema.safeParse(rest);
  return second.success ? second.data : null;
}

// ---- xce.yaml ----

function checkXce(parsed: Parsed, profiles: ProfilesResult | null): ClusterSection | null {
  const p = parsed['xce.yaml'];
  if (p === undefined || p.data === null) return null;
  const { f, data } = p;
  const ids = new Map<number, number>();
  const addrs = new Map<string, number>();
  data.controllers.forEach((c, i) => {
    if (c === null) return;
    if (ids.has(c.id))
      f.error(['controllers', i, 'id'], `controller id ${c.id} is used twice; Raft member ids must be unique`);
    else ids.set(c.id, i);
    const addr = `${c.host}:${c.port}`;
    if (addrs.has(addr)) f.error(['controllers', i, 'port'], `controller address ${addr} is used twice`);
    else addrs.set(addr, i);
  });
  if (data.controllers.length % 2 === 0) {
    f.warning(
      ['controllers'],
      `${data.controllers.length} controllers tolerate no more failures than ${data.controllers.length - 1}; use an odd number (3 or 5)`,
    );
  }
  if ((data.secret === undefined) === (data.secret_file === undefined)) {
    f.error(['secret_file'], `set exactly one of secret_file (production) or secret (development only)`);
  }

  let defaultApplication = DEFAULT_PROFILE_NAME;
  if (data.default_application !== undefined) {
    const name = data.default_application;
    defaultApplication = name;
    if (profiles !== null) {
      const target = profiles.aliases.get(name);
      if (target !== undefined) {
        f.error(
          ['default_application'],
          `default_application names ${name}, which is an alias of profile ${target}; name the profile itself (${target})`,
        );
      } else if (!profiles.names.has(name)) {
        f.error(
          ['default_application'],
          profiles.fromFile
            ? `default_application names profile ${name}, which is not defined in applications.yaml; every job submitted without --app would fail`
            : `default_application names profile ${name}, but there is no applications.yaml (only the built-in ${DEFAULT_PROFILE_NAME} profile exists)`,
        );
      }
    }
  } else if (profiles !== null && profiles.fromFile && !profiles.profiles.has(DEFAULT_PROFILE_NAME)) {
    if (profiles.aliases.has(DEFAULT_PROFILE_NAME)) {
      f.error(
        [],
        `xce.yaml sets no default_application, so jobs without --app use "${DEFAULT_PROFILE_NAME}", but applications.yaml makes "${DEFAULT_PROFILE_NAME}" an alias; set default_application`,
      );
    } else {
      // No default named: the built-in `default` (mode direct, no attributes) serves jobs without --app.
      profiles.profiles.set(DEFAULT_PROFILE_NAME, builtinDefaultProfile(DEFAULT_PROFILE_NAME));
    }
  }
  if (!f.ok) return null;
  return {
    name: data.name,
    controllers: data.controllers.flatMap((c) => (c === null ? [] : [{ id: c.id, host: c.host, port: c.port }])),
    secret:
      data.secret_file !== undefined
        ? { kind: 'file', path: data.secret_file }
        : { kind: 'inline', value: data.secret as string },
    defaultApplication,
  };
}

// ---- queues.yaml ----

function checkQueues(
  parsed: Parsed,
  resources: ReadonlyMap<string, ResourceRef> | null,
): Map<string, QueueConfig> | null {
  const p = parsed['queues.yaml'];
  if (p === undefined || p.data === null) return null;
  const { f, data } = p;
  uniqueNames(f, 'queues', data.queues, 'queue');
  const out = new Map<string, QueueConfig>();
  data.queues.forEach((q, i) => {
    if (q === null) return;
    const path: Path = ['queues', i];
    if (q.res_req !== undefined) {
      resReqAt(f, [...path, 'res_req'], q.res_req, resources);
      f.warning(
        [...path, 'res_req'],
        `queue ${q.name} sets res_req, which is deprecated: a queue holds scheduling policy only; move "${q.res_req}" into the resreq of an application profile (applications.yaml)`,
      );
    }
    for (const key of ['pre_exec', 'post_exec'] as const) {
      if (q[key] !== undefined) {
        f.warning(
          [...path, key],
          `queue ${q.name} sets ${key}, which is deprecated: move it into the ${key} of an application profile (applications.yaml), where it runs as the outer layer in a clean environment`,
        );
      }
    }
    if (!out.has(q.name)) {
      out.set(q.name, {
        name: q.name,
        priority: q.priority,
        description: q.description ?? null,
        deprecatedResReq: q.res_req ?? null,
        deprecatedPreExec: q.pre_exec ?? null,
        deprecatedPostExec: q.post_exec ?? null,
      });
    }
  });
  return out;
}

// ---- hosts.yaml ----

function checkHosts(
  parsed: Parsed,
  resources: ReadonlyMap<string, ResourceConfig> | null,
): Map<string, HostConfig> | null {
  const p = parsed['hosts.yaml'];
  const out = new Map<string, HostConfig>();
  if (p === undefined) return out;
  if (p.data === null) return null;
  const { f, data } = p;
  uniqueNames(f, 'hosts', data.hosts, 'host');
  data.hosts.forEach((h, i) => {
    if (h === null) return;
    const path: Path = ['hosts', i];
    const mem = sizeAt(f, [...path, 'mem'], h.mem);
    const check = (
      key: 'resources' | 'numeric' | 'strings',
      name: string,
      want: 'boolean' | 'numeric' | 'string',
      at: Path,
    ): void => {
      if (resources === null) return;
      const r = resources.get(name);
      if (r === undefined)
        f.error(at, `host ${h.name} lists resource "${name}", which is not defined in resources.yaml`);
      else if (r.scope !== 'host')
        f.error(at, `resource "${name}" is cluster-scope (a shared pool); hosts cannot hold it`);
      else if (r.type !== want)
        f.error(
          at,
          `resource "${name}" is ${r.type}; list it under ${r.type === 'boolean' ? 'resources' : r.type === 'numeric' ? 'numeric' : 'strings'}, not ${key}`,
        );
    };
    (h.resources ?? []).forEach((n, k) => check('resources', n, 'boolean', [...path, 'resources', k]));
    for (const n of Object.keys(h.numeric ?? {})) check('numeric', n, 'numeric', [...path, 'numeric', n]);
    // Capacities are counted in milli-units like the reservations against them (amount.ts).
    for (const [n, v] of Object.entries(h.numeric ?? {})) {
      const problem = amountProblem(v);
      if (problem !== null) f.error([...path, 'numeric', n], problem);
    }
    for (const n of Object.keys(h.strings ?? {})) check('strings', n, 'string', [...path, 'strings', n]);
    if (mem !== null && !out.has(h.name)) {
      out.set(h.name, {
        name: h.name,
        slots: h.slots,
        mem_bytes: mem,
        booleans: [...new Set(h.resources ?? [])].sort(),
        numerics: Object.entries(h.numeric ?? {})
          .map(([name, value]) => ({ name, value }))
          .sort((a, b) => (a.name < b.name ? -1 : 1)),
        strings: Object.entries(h.strings ?? {})
          .map(([name, value]) => ({ name, value }))
          .sort((a, b) => (a.name < b.name ? -1 : 1)),
      });
    }
  });
  return out;
}

// ---- users.yaml ----

function checkUsers(parsed: Parsed): Map<string, UserConfig> | null {
  const p = parsed['users.yaml'];
  const out = new Map<string, UserConfig>();
  if (p === undefined) return out;
  if (p.data === null) return null;
  const { f, data } = p;
  uniqueNames(f, 'users', data.users, 'user');
  for (const u of data.users) {
    if (u !== null && !out.has(u.name))
      out.set(u.name, { name: u.name, groups: [...new Set(u.groups ?? [])].sort(), passwordHash: u.password });
  }
  return out;
}

// ---- rbac.yaml ----

function checkRbac(
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
      const path: Path = ['roles', i, 'permissions', k];
      const want = PERMISSION_SCOPE[perm.name];
      const type = perm.type ?? 'all';
      if (want === 'all' && type !== 'all') {
        f.error([...path, 'type'], `${perm.name} is not scoped to a ${type}; leave out type and values`);
        return;
      }
      if (want !== 'all' && type !== want && type !== 'all') {
        f.error([...path, 'type'], `${perm.name} is scoped by type ${want}, not ${type}`);
        return;
      }
      const values = want === 'all' ? [] : type === 'all' ? [SCOPE_ALL] : (perm.values ?? []);
      if (want !== 'all' && values.length === 0) {
        f.error(
          [...path, 'values'],
          `${perm.name} with type ${want} needs values: the ${want === 'queue' ? 'queue' : 'profile'} names, or all`,
        );
        return;
      }
      if (want === 'all' && perm.values !== undefined) {
        f.error([...path, 'values'], `${perm.name} takes no values`);
        return;
      }
      values.forEach((v, j) => {
        if (v === SCOPE_ALL) return;
        const vp: Path = [...path, 'values', j];
        if (want === 'queue' && queueNames !== null && !queueNames.has(v))
          f.error(vp, `${perm.name} names queue ${v}, which is not defined in queues.yaml`);
        if (want === 'app' && profiles !== null) {
          const target = profiles.aliases.get(v);
          if (target !== undefined)
            f.error(
              vp,
              `${perm.name} names ${v}, an alias of profile ${target}; app permissions are checked against the profile, so name ${target}`,
            );
          // A warning, not an error: a grant on a removed profile is harmless, and a profile
          // removal or rename must not need an rbac.yaml edit in the same upgrade.
          else if (!profiles.names.has(v))
            f.warning(
              vp,
              `${perm.name} names application profile ${v}, which is not defined in applications.yaml (the grant has no effect)`,
            );
        }
      });
      grants.push({ permission: perm.name, scopeType: want === 'all' ? 'all' : type === 'all' ? want : type, values });
    });
    if (!roles.has(r.name)) roles.set(r.name, { name: r.name, description: r.description ?? null, grants });
  });
  const roleNames = rawNames(f, 'roles');
  const knownGroups = new Set<string>();
  for (const u of users?.values() ?? []) for (const g of u.groups) knownGroups.add(g);
  data.bindings.forEach((b, i) => {
    if (b === null) return;
    const path: Path = ['bindings', i];
    if (!roleNames.has(b.role) && b.role !== CLUSTER_ADMIN_ROLE)
      f.error([...path, 'role'], `binding names role ${b.role}, which is not defined in roles`);
    if ((b.users ?? []).length + (b.groups ?? []).length === 0)
      f.error(path, `binding of role ${b.role} names no users and no groups`);
    if (users !== null && parsed['users.yaml'] !== undefined) {
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
  if (!f.ok) return null;
  return {
    roles,
    bindings: data.bindings.flatMap((b) =>
      b === null ? [] : [{ role: b.role, users: b.users ?? [], groups: b.groups ?? [] }],
    ),
  };
}
