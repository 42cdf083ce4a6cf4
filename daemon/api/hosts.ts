// The client API's host view (`hosts.list`, `xcecli hosts`, like LSF's bhosts): every host of
// hosts.yaml with the capacity the scheduler uses (hosts.yaml's reconciled with what its worker
// registered, statemachine/host-capacity.ts), the slots running jobs hold, and why the capacity
// differs from hosts.yaml. Whether a host's worker is connected is known to the leader only.

import type { RequestOf } from '../../api/protocol.js';
import type { HostList, HostRow } from '../../api/responses.js';
import { hostCapacity } from '../../statemachine/host-capacity.js';
import type { ApiContext } from './context.js';
import { readConfig } from './steps.js';

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
    });
  }
  return { hosts, statusFrom: available === null ? ctx.node.leaderId() || null : ctx.node.id };
}
