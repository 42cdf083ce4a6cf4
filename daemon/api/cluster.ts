// The client API's cluster operations: cluster.status (this node's view of Raft, the members, the
// job counts and the hosts whose registration disagrees with hosts.yaml), cluster.transferLeader, and cluster.addMember / cluster.removeMember (Raft
// membership changes, proposed on the leader).

import type { OpArgs, RequestOf } from '../../api/protocol.js';
import type { ClusterMember, ClusterStatus, MembershipResult, TransferResult } from '../../api/responses.js';
import { ConfChangeType } from '../../raft/confchange.js';
import { mismatchedHosts } from '../../statemachine/host-capacity.js';
import type { ApiContext } from './context.js';
import { ApiFailure } from './errors.js';
import { allowed, check, requireConfig, requireLeader } from './steps.js';
import { countJobs } from './views.js';

/** How long cluster.transferLeader waits for the leadership to move before it answers. */
const TRANSFER_WAIT_MS = 3_000;

export function clusterStatus(ctx: ApiContext, user: string): ClusterStatus {
  const node = ctx.node;
  const config = ctx.config() ?? ctx.bootstrapConfig;
  if (!allowed(config, user, 'cluster:view')) check(config, user, 'cluster:admin');
  const s = node.status();
  const prs = node.matchIndexes();
  const members: ClusterMember[] = [
    ...s.conf.voters.map((id) => ({ id, role: 'voter' as const })),
    ...s.conf.learners.map((id) => ({ id, role: 'learner' as const })),
  ].map((m) => ({
    ...m,
    address: node.addressOf(m.id),
    leader: m.id === s.lead,
    match: prs.get(m.id) ?? null,
    lag: prs.has(m.id) ? s.lastIndex - (prs.get(m.id) ?? 0) : null,
    connected: m.id === node.id ? true : node.transport.connected(m.id),
  }));
  return {
    node: node.id,
    leader: s.lead,
    leaderAddress: s.lead ? node.addressOf(s.lead) : null,
    term: s.term,
    commit: s.commit,
    applied: s.appliedIndex,
    lastIndex: s.lastIndex,
    snapshotIndex: s.snapshotIndex,
    members,
    jobs: countJobs(node.state),
    hostMismatches:
      node.state.config === null
        ? []
        : mismatchedHosts(node.state.config.cluster, node.state.hosts).flatMap((h) => h.reasons),
  };
}

export async function transferLeader(
  ctx: ApiContext,
  user: string,
  args: OpArgs<'cluster.transferLeader'>,
): Promise<TransferResult> {
  const node = ctx.node;
  check(requireConfig(ctx), user, 'cluster:admin');
  requireLeader(ctx); // a follower answers not-leader with the address
  const s = node.status();
  const to = args.to ?? s.conf.voters.find((id) => id !== node.id && node.transport.connected(id));
  if (to === undefined) throw new ApiFailure('rejected', 'no other voter is connected to take over leadership');
  if (!s.conf.voters.includes(to))
    throw new ApiFailure('rejected', `node ${to} is not a voter of this cluster (voters: ${s.conf.voters.join(', ')})`);
  node.transferLeader(to);
  const until = ctx.now() + TRANSFER_WAIT_MS;
  while (node.isLeader() && ctx.now() < until) await new Promise((r) => setTimeout(r, 10));
  return { transferred: !node.isLeader(), to, leader: node.leaderId() };
}

/** A member is added only at the address xce.yaml lists for it (`config.upgrade` first). */
export async function membership(
  ctx: ApiContext,
  user: string,
  req: RequestOf<'cluster.addMember' | 'cluster.removeMember'>,
): Promise<MembershipResult> {
  const node = ctx.node;
  const config = requireConfig(ctx);
  check(config, user, 'cluster:admin');
  requireLeader(ctx);
  const id = req.args.id;
  if (req.op === 'cluster.addMember') {
    const listed = config.cluster.controllers.find((c) => c.id === id);
    if (listed === undefined)
      throw new ApiFailure(
        'rejected',
        `node ${id} is not in xce.yaml controllers; add its address there with \`xceadmin config upgrade\` first`,
      );
    if (`${listed.host}:${listed.port}` !== req.args.address) {
      throw new ApiFailure(
        'rejected',
        `node ${id} is listed in xce.yaml at ${listed.host}:${listed.port}, not ${req.args.address}`,
      );
    }
    await node.proposeConfChange({
      type: req.args.learner ? ConfChangeType.AddLearner : ConfChangeType.AddVoter,
      nodeId: id,
    });
  } else {
    await node.proposeConfChange({ type: ConfChangeType.RemoveNode, nodeId: id });
  }
  const s = node.status();
  return { voters: s.conf.voters, learners: s.conf.learners };
}
