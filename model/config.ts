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
//
// The rules are grouped by concern, a file each: config-hosts.ts (resources.yaml, hosts.yaml),
// config-queues.ts, config-profiles.ts (applications.yaml, aliases), config-controllers.ts
// (xce.yaml: controllers, secret, default application), config-rbac.ts (users.yaml, rbac.yaml);
// config-parsed.ts holds what they share.

import { ConfigFile } from './config-file.js';
import { checkXce } from './config-controllers.js';
import { checkHosts, checkResources } from './config-hosts.js';
import type { Parsed } from './config-parsed.js';
import { checkApplications } from './config-profiles.js';
import { checkSitePresets, PRESETS_DIR } from './config-presets.js';
import { checkQueues } from './config-queues.js';
import { checkRbac, checkUsers } from './config-rbac.js';
import { CONFIG_FILE_NAMES, FILE_SCHEMAS, type ConfigFileName } from './config-schema.js';
import type { ClusterConfig, ConfigLoadResult, Diagnostic } from './config-types.js';
import type { ResourceRef } from './resreq.js';

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

/**
 * The name a file travels under in a ConfigFact: its base name, or `presets/<base name>` for a
 * site preset (a file in a `presets` folder). Every controller stores the same bytes whatever its
 * configuration path.
 */
export function configFileKey(path: string): string {
  const parts = path.split(/[\\/]/).filter((p) => p !== '');
  const base = parts[parts.length - 1] ?? path;
  return parts[parts.length - 2] === PRESETS_DIR ? `${PRESETS_DIR}/${base}` : base;
}

/** The files by base name (each at most once, unknown names warned about), and the required ones checked. */
function filesByName(
  files: ReadonlyArray<ConfigFileText>,
  top: Diagnostic[],
  presets: Array<{ key: string; text: string }>,
): Map<ConfigFileName, ConfigFile> {
  const byName = new Map<ConfigFileName, ConfigFile>();
  for (const { path, text } of files) {
    const key = configFileKey(path);
    if (key.startsWith(`${PRESETS_DIR}/`)) {
      if (presets.some((p) => p.key === key))
        top.push({ severity: 'error', file: key, message: `${key} is given twice` });
      else presets.push({ key, text });
      continue;
    }
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
  return byName;
}

/** Every file's diagnostics after `top`: file by file, each in the order of its text (those without a position first). */
function allDiagnostics(parsed: Parsed, top: readonly Diagnostic[]): Diagnostic[] {
  const all: Diagnostic[] = [...top];
  for (const name of CONFIG_FILE_NAMES) {
    const p = parsed[name];
    if (p !== undefined)
      all.push(
        ...[...p.f.diagnostics].sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0)),
      );
  }
  return all;
}

/**
 * The last files loaded and what they gave. A controller loads the same files several times (its
 * bootstrap, the configuration fact applied, a snapshot restored), and a site of 2,000 hosts spends
 * seconds of its event loop parsing hosts.yaml each time; the result is read-only (ClusterConfig is
 * readonly throughout), so the same files give the same object.
 */
let lastLoaded: { readonly files: readonly ConfigFileText[]; readonly result: ConfigLoadResult } | null = null;

const sameFiles = (a: ReadonlyArray<ConfigFileText>, b: ReadonlyArray<ConfigFileText>): boolean =>
  a.length === b.length && a.every((f, i) => f.path === b[i]!.path && f.text === b[i]!.text);

/** Validates the configuration files together (pure: the same files give the same result). */
export function loadConfig(files: ReadonlyArray<ConfigFileText>): ConfigLoadResult {
  if (lastLoaded !== null && sameFiles(lastLoaded.files, files)) return lastLoaded.result;
  const result = loadConfigFiles(files);
  lastLoaded = { files: files.map((f) => ({ path: f.path, text: f.text })), result };
  return result;
}

function loadConfigFiles(files: ReadonlyArray<ConfigFileText>): ConfigLoadResult {
  const top: Diagnostic[] = [];
  const presetFiles: Array<{ key: string; text: string }> = [];
  const byName = filesByName(files, top, presetFiles);

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

  const presetDiagnostics: Diagnostic[] = [];
  const presets = checkSitePresets(
    {
      files: presetFiles.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
      resources: resourceRefs,
      profiles: profilesResult,
      defaultApplication: cluster?.defaultApplication ?? null,
      queues,
    },
    presetDiagnostics,
  );

  const all = [...allDiagnostics(parsed, top), ...presetDiagnostics];
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
    users === null ||
    presets === null
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
    presets,
  };
  return { ok: true, config, warnings };
}
