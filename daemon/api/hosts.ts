// The client API's `hosts.list` (LSF's `bhosts`): the hosts of hosts.yaml with their slots used
// (from the running jobs' dispatch records, the replicated usage) and total, the running jobs on
// each, and, on the leader, whether a worker serves the host.

import type { Request } from '../../api/protocol.js';
import type { HostList } from '../../api/responses.js';
import type { ApiContext } from './context.js';
import { read, requireConfig } from './steps.js';

export async function listHosts(
  ctx: ApiContext,
  _user: string,
  req: Extract<Request, { op: 'hosts.list' }>,
): Promise<HostList> {
  await read(ctx, req);
  const config = requireConfig(ctx);
  const state = ctx.node.state;
  const running = new Map<string, number>();
  for (const j of state.jobs.values()) {
    if (j.state !== 'RUN' || j.record === null) continue;
    for (const h of j.record.hosts) running.set(h.host, (running.get(h.host) ?? 0) + 1);
  }
  const available = ctx.availableHosts();
  return {
    hosts: [...config.hosts.values()].map((h) => ({
      name: h.name,
      slotsTotal: h.slots,
      slotsUsed: state.usage.slots.get(h.name) ?? 0,
      runningJobs: running.get(h.name) ?? 0,
      resources: h.booleans,
      available: available === null ? null : available.has(h.name),
    })),
  };
}
