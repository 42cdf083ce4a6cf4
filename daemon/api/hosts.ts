// The client API's host view (`hosts.list`, `hosts.show`, `xcecli hosts [show NAME]`, like LSF's bhosts
// and bhosts -l): every host of hosts.yaml with the capacity the scheduler uses (hosts.yaml's reconciled
// with what its worker registered, statemachine/host-capacity.ts), the slots running jobs hold, why the
// capacity differs from hosts.yaml, and one host's resources and running jobs. Whether a host's worker
// is connected (ok, unavail, lost) is known to the leader only.

import type { OpArgs, RequestOf, Session } from '../../api/protocol.js';
import type { HostControlResult, HostDetail, HostList, HostRow } from '../../api/responses.js';
import type { ClusterConfig } from '../../model/config-types.js';
import { formatJobId } from '../../model/job-id.js';
import { fromMilli } from '../../model/amount.js';
import { isRunning } from '../../statemachine/state.js';
import { canSeeJob } from './jobs.js';
import { hostCapacity } from '../../statemachine/host-capacity.js';
import type { ClosedHost } from '../../statemachine/state.js';
import type { ApiContext } from './context.js';
import { ApiFailure } from './errors.js';
import { check, readConfig, requireConfig, requireLeader, write } from './steps.js';

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
  leaderUnlessStale(ctx, req);
  const config = await readConfig(ctx, req);
  const view = statusView(ctx);
  const hosts = [...config.hosts.keys()].sort().map((name) => hostRow(ctx, config, name, view));
  return { hosts, statusFrom: view === null ? ctx.node.leaderId() || null : ctx.node.id };
}

/**
 * Whether a host's worker is connected is known to the leader only (its workers connect to it): a
 * follower asked without `stale` answers `not-leader`, and the client follows to the leader; with
 * `stale` it answers with its own view, the status unknown (null).
 */
function leaderUnlessStale(ctx: ApiContext, req: { readonly stale?: boolean }): void {
  if (req.stale !== true) requireLeader(ctx);
}

/** The leader's view of its workers (null on a follower: only the leader knows). */
function statusView(ctx: ApiContext): { available: ReadonlySet<string>; lost: ReadonlySet<string> } | null {
  return ctx.node.isLeader() ? { available: ctx.availableHosts(), lost: ctx.lostHosts() } : null;
}

function hostRow(ctx: ApiContext, config: ClusterConfig, name: string, view: ReturnType<typeof statusView>): HostRow {
  const state = ctx.node.state;
  const configured = config.hosts.get(name)!;
  const reg = state.hosts.get(name);
  const cap = hostCapacity(configured, reg);
  return {
    name,
    status: view === null ? null : view.available.has(name) ? 'ok' : view.lost.has(name) ? 'lost' : 'unavail',
    slots: cap.host.slots,
    slotsUsed: state.usage.slots.get(name) ?? 0,
    mem_bytes: cap.host.mem_bytes,
    configured: { slots: configured.slots, mem_bytes: configured.mem_bytes },
    registered: reg === undefined ? null : { slots: reg.slots, mem_bytes: reg.memBytes, timeMs: reg.timeMs },
    mismatches: [...cap.mismatches],
    closed: closedOf(state.closedHosts.get(name)),
  };
}

/**
 * `hosts.show NAME` (`xcecli hosts show NAME`, like `bhosts -l`): the host's row, its resources
 * (numeric ones with what running jobs hold of them) and the running jobs with tasks on it that the
 * asking user may see (the others counted).
 */
export async function showHost(ctx: ApiContext, user: string, req: RequestOf<'hosts.show'>): Promise<HostDetail> {
  leaderUnlessStale(ctx, req);
  const config = await readConfig(ctx, req);
  const name = req.args.name;
  const configured = config.hosts.get(name);
  if (configured === undefined)
    throw new ApiFailure('not-found', `host ${name} is not in hosts.yaml (see \`xcecli hosts\`)`);
  const state = ctx.node.state;
  const held = state.usage.hostRusage.get(name);
  const jobs: HostDetail['jobs'] = [];
  let otherJobs = 0;
  for (const j of state.jobs.values()) {
    if (!isRunning(j) || j.record === null) continue;
    const on = j.record.hosts.find((h) => h.host === name);
    if (on === undefined) continue;
    if (!canSeeJob(config, user, j)) {
      otherJobs++;
      continue;
    }
    const state_ = j.state === 'SUSP' ? 'SUSP' : 'RUN';
    jobs.push({
      id: j.id,
      label: formatJobId(j.id),
      user: j.user,
      state: state_,
      tasks: on.tasks,
      name: j.spec.jobName,
    });
  }
  return {
    ...hostRow(ctx, config, name, statusView(ctx)),
    resources: {
      booleans: [...configured.booleans],
      numerics: configured.numerics.map((n) => ({
        name: n.name,
        value: n.value,
        used: fromMilli(held?.get(n.name) ?? 0),
      })),
      strings: configured.strings.map((x) => ({ name: x.name, value: x.value })),
    },
    jobs,
    otherJobs,
  };
}
