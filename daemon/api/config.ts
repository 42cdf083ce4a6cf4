// The client API's `config.upgrade`: a new set of configuration files, validated whole (nothing
// changes when one is invalid), refused when it drops a current member's address, and proposed
// as a ConfigFact through Raft.

import type { ConfigUpgradeResult } from '../../api/responses.js';
import { loadConfig } from '../../model/config.js';
import { formatDiagnostic } from '../../model/diagnostics.js';
import { ApiFailure } from './errors.js';
import { check, latestConfig, write, type WriteOp } from './steps.js';

export const upgrade: WriteOp<'config.upgrade', ConfigUpgradeResult> = async (ctx, user, session, args) => {
  const config = await latestConfig(ctx);
  check(config, user, 'cluster:admin');
  const loaded = loadConfig(args.files);
  if (!loaded.ok) {
    const lines = loaded.errors.map(formatDiagnostic).join('\n');
    throw new ApiFailure('rejected', `the configuration is invalid; nothing changed:\n${lines}`);
  }
  // A configuration that drops a current member's address would cut the cluster in pieces.
  const conf = ctx.node.status().conf;
  const ids = new Set(loaded.config.cluster.controllers.map((c) => c.id));
  const missing = [...conf.voters, ...conf.learners].filter((id) => !ids.has(id));
  if (missing.length > 0) {
    throw new ApiFailure(
      'rejected',
      `xce.yaml controllers must list every current member; missing: ${missing.join(', ')} (remove a member with \`xceadmin cluster remove-member\` first)`,
    );
  }
  const r = await write(ctx, session, { kind: 'config', files: args.files, user });
  if (r.kind !== 'configApplied')
    throw new ApiFailure('internal', `unexpected apply result ${r.kind} for a config upgrade`);
  return { applied: true, inUse: r.inUse, warnings: r.warnings };
};
