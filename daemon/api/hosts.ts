// The client API's host view (`hosts.list`, `xcecli hosts`, like LSF's bhosts): every host of
// hosts.yaml with the capacity the scheduler uses (hosts.yaml's reconciled with what its worker
// registered, statemachine/host-capacity.ts), the slots running jobs hold, and why the capacity
// differs from hosts.yaml. Whether a host's worker is connected is known to the leader only.

import type { OpArgs, RequestOf, Session } from '../../api/protocol.js';
import type { HostControlResult, HostList, HostRow } from '../../api/responses.js';
import { hostCapacity } from '../../statemachine/host-capacity.js';
import type { ClosedHost } from '../../statemachine/state.js';
import type { ApiContext } from './context.js';
import { ApiFailure } from './errors.js';
import { check, readConfig, requireConfig, write } from './steps.js';

function closedOf(c: ClosedHost | undefined): HostRow['closed'] {
  return c === undefined ? null : { reason: c.reason, user: c.user, timeMs: c.timeMs };
}

/**
 * `hosts.close` / `hosts.open` (`xceadmin hosts close|open NAME`): a replicated HostControlFact
 * (statemachine/apply-host-control.ts), cluster:admin. A closed host gets no new jobs; its running
 * ones go on.
 */
export async function controlHost(
  ctx: ApiContext,
  user: string,
  session: Session | undefined,
  close: boolean,
  args: OpArgs<'hosts.close'>,
): Promise<HostControlResult> {
  const config = requireConfig(ctx);
  check(config, user, 'cluster:admin');
  if (!config.hosts.has(args.name))
    throw new ApiFailure('not-found', `host ${args.name} is not in hosts.yaml (see \`xcecli hosts\`)`);
  const reason = close ? (args.reason ?? null) : null;
  const r = await write(ctx, session, { kind: 'hostControl', host: args.name, close, reason, user });
  if (r.kind !== 'hostControlled')
    throw new ApiFailure('internal', `unexpected apply result ${r.kind} for a host ${close ? 'close' : 'open'}`);
  return { host: args.name, closed: close, reason };
}

export async function listHosts(ctx: ApiContext, _user: string, req: RequestOf<'hosts.list'>): Promise<HostList> {
  const config = await readConfig(ctx, req);
  const state = ctx.node.state;
  const available = ctx.node.isLeader() ? ctx.availableHosts() : null;
  const hosts: HostRow[] = [];
  for (const name of [...config.hosts.keys()].sort()) {
    const configured = config.hosts.get(name)!;
    const reg = state.hosts.get(name);
    const cap = hostCapacity(configured, reg);
    hosts.push({
      name,
      status: available === null ? null : available.has(name) ? 'ok' : 'unavail',
      slots: cap.host.slots,
      slotsUsed: state.usage.slots.get(name) ?? 0,
      mem_bytes: cap.host.mem_bytes,
      configured: { slots: configured.slots, mem_bytes: configured.mem_bytes },
      registered: reg === undefined ? null : { slots: reg.slots, mem_bytes: reg.memBytes, timeMs: reg.timeMs },
      mismatches: [...cap.mismatches],
      closed: closedOf(state.closedHosts.get(name)),
    });
  }
  return { hosts, statusFrom: available === null ? ctx.node.leaderId() || null : ctx.node.id };
}
