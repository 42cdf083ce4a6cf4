// The client API's role operations: roles.list, and roles.set / roles.delete, which edit rbac.yaml
// of the configuration in force (YAML document editing, comments kept) and propose the whole
// configuration again, validated like any upgrade and replicated through Raft.

import { isMap, isSeq, parseDocument } from 'yaml';
import type { RequestOf } from '../../api/protocol.js';
import type { RoleChangeResult, RoleList } from '../../api/responses.js';
import { baseName, loadConfig } from '../../model/config.js';
import { formatDiagnostic } from '../../model/diagnostics.js';
import type { ApiContext } from './context.js';
import { ApiFailure } from './errors.js';
import { check, readConfig, write } from './steps.js';

type RoleChange = RequestOf<'roles.set' | 'roles.delete'>;

export async function listRoles(ctx: ApiContext, user: string, req: RequestOf<'roles.list'>): Promise<RoleList> {
  const config = await readConfig(ctx, req);
  check(config, user, 'cluster:admin');
  return {
    roles: [...config.rbac.roles.values()].map((r) => ({
      name: r.name,
      description: r.description,
      grants: r.grants,
    })),
    bindings: config.rbac.bindings,
  };
}

/**
 * The role API: creates, replaces or deletes a role by editing rbac.yaml of the CURRENT
 * configuration and proposing it as a whole (validated like any upgrade, replicated through
 * Raft, so API-made grants persist). Scope types are `queue`, `app` (profile names or all), `all`.
 */
export async function changeRole(ctx: ApiContext, user: string, req: RoleChange): Promise<RoleChangeResult> {
  await ctx.node.readBarrier(); // edit the newest committed rbac.yaml, not a stale one
  const current = ctx.node.state.config;
  if (current === null) throw new ApiFailure('unavailable', 'the cluster has no configuration yet; retry shortly');
  check(current.cluster, user, 'cluster:admin');
  const files = current.files.map((f) => ({ path: f.path, text: f.text }));
  const rbac = files.find((f) => baseName(f.path) === 'rbac.yaml');
  if (rbac === undefined) throw new ApiFailure('rejected', 'the configuration has no rbac.yaml to change');
  const { text, existed } = editRbac(rbac.text, req);
  rbac.text = text;
  const loaded = loadConfig(files);
  if (!loaded.ok) {
    const lines = loaded.errors.map(formatDiagnostic).join('\n');
    throw new ApiFailure('rejected', `the role is not valid; nothing changed:\n${lines}`);
  }
  const r = await write(ctx, req.session, { kind: 'config', files, user });
  if (r.kind !== 'configApplied') throw new ApiFailure('internal', `unexpected apply result ${r.kind}`);
  return { role: req.args.name, action: req.op === 'roles.set' ? (existed ? 'replaced' : 'created') : 'deleted' };
}

/** rbac.yaml's text with the role set or deleted; `existed`: the role was defined before. */
function editRbac(source: string, req: RoleChange): { text: string; existed: boolean } {
  const doc = parseDocument(source);
  const roles = doc.get('roles');
  if (!isSeq(roles)) throw new ApiFailure('rejected', 'rbac.yaml has no roles list');
  const index = roles.items.findIndex((it) => isMap(it) && it.get('name') === req.args.name);
  if (req.op === 'roles.delete') {
    if (index < 0) throw new ApiFailure('not-found', `role ${req.args.name} is not defined`);
    roles.items.splice(index, 1);
  } else {
    const role: Record<string, unknown> = { name: req.args.name };
    if (req.args.description !== undefined) role['description'] = req.args.description;
    role['permissions'] = req.args.permissions.map((p) => ({
      name: p.name,
      ...(p.type !== undefined ? { type: p.type } : {}),
      ...(p.values !== undefined ? { values: p.values } : {}),
    }));
    const node = doc.createNode(role);
    if (index >= 0) roles.items[index] = node;
    else roles.items.push(node);
  }
  return { text: doc.toString(), existed: index >= 0 };
}
