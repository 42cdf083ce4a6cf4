// The one "not leader" answer of a controller that does not lead, on every endpoint: the client
// API (`not-leader` / `no-leader` error bodies), the worker endpoint (the `not-leader` frame) and a
// core refusal mapped for a client (daemon/api/errors.ts). With the leader's id and address when
// this node knows them, so that the other side dials it next (daemon/net/leader-follower.ts). The
// leader named is `leaderId()`, the one rule of raft's `liveLeader()`: a follower that has not heard
// from its leader within an election timeout (a dead machine, whose connections hang rather than
// being refused) names none, so that the other side tries the other controllers on its short
// failover schedule instead of waiting out a handshake timeout against the dead one.

/** Where the leader is, as a follower tells it. */
export interface LeaderHint {
  readonly id: number;
  readonly address: string;
}

/** What a node knows of the leader: its own id, the leader's (0: none known, or not heard from
 * within an election timeout), members' addresses. */
export interface LeaderView {
  readonly id: number;
  leaderId(): number;
  addressOf(id: number): string | null;
}

export type NotLeaderReply =
  | { readonly code: 'not-leader'; readonly message: string; readonly leader: LeaderHint }
  | { readonly code: 'no-leader'; readonly message: string; readonly leader?: undefined };

/** The answer of `node`, which does not lead (`lead`: the leader it knows, 0 when none; default: its own view). */
export function notLeaderReply(node: LeaderView, lead: number = node.leaderId()): NotLeaderReply {
  const address = lead !== 0 ? node.addressOf(lead) : null;
  if (address === null)
    return {
      code: 'no-leader',
      message: 'the cluster has no leader right now (an election is under way); retry shortly',
    };
  return {
    code: 'not-leader',
    message: `node ${node.id} is not the leader; the leader is node ${lead} at ${address}`,
    leader: { id: lead, address },
  };
}
