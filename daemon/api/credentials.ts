// `hosts.revoke` and `hosts.enroll` (issue 19): a cluster_admin refuses a host's credential on every
// controller (its worker is disconnected at once), or enrolls a host and gets its credential: the
// line `xceadmin host enroll` writes to the host's credential file. A revoked host is enrolled at
// the next epoch, so its old credential stays refused.

import type { OpArgs, Session } from '../../api/protocol.js';
import type { HostCredentialResult } from '../../api/responses.js';
import type { ApiContext } from './context.js';
import { ApiFailure } from './errors.js';
import { check, requireConfig, write } from './steps.js';

export async function revokeHost(
  ctx: ApiContext,
  user: string,
  session: Session | undefined,
  args: OpArgs<'hosts.revoke'>,
): Promise<HostCredentialResult> {
  check(requireConfig(ctx), user, 'cluster:admin');
  await write(ctx, session, { kind: 'credential', action: 'revokeHost', name: args.host, untilMs: 0, user });
  const h = ctx.node.state.hostCredentials.get(args.host);
  return { host: args.host, epoch: h?.epoch ?? 0, revoked: h?.revoked ?? false };
}

export async function enrollHost(
  ctx: ApiContext,
  user: string,
  session: Session | undefined,
  args: OpArgs<'hosts.enroll'>,
): Promise<HostCredentialResult> {
  const config = requireConfig(ctx);
  check(config, user, 'cluster:admin');
  if (!config.hosts.has(args.host))
    throw new ApiFailure(
      'rejected',
      `host ${args.host} is not in hosts.yaml: add it there first (xceadmin config upgrade)`,
    );
  await write(ctx, session, { kind: 'credential', action: 'enrollHost', name: args.host, untilMs: 0, user });
  const h = ctx.node.state.hostCredentials.get(args.host);
  const epoch = h?.epoch ?? 0;
  const credential = ctx.hostCredential(args.host, epoch);
  if (credential === null) throw new ApiFailure('unavailable', 'this controller cannot derive host credentials');
  return { host: args.host, epoch, revoked: h?.revoked ?? false, credential };
}
