// Which controllers the core links to: the members of the configuration in force (voters and
// learners) but itself; a node that is not a member yet (started with `join`) links to every listed
// controller. Recomputed at start and whenever an applied entry changes the membership.

import type { ConfState } from '../../raft/types.js';
import type { ControllerState } from '../../statemachine/state.js';
import type { PeerAddress } from './core-options.js';

/**
 * The peers to link to. A node that is not a member itself (started with `join`, waiting to be
 * added) links to every listed controller: it must answer the leader's first append, or the leader
 * never learns that it needs a snapshot.
 */
export function peerLinks(
  id: number,
  conf: ConfState,
  state: ControllerState,
  addresses: (state: ControllerState) => readonly PeerAddress[],
): PeerAddress[] {
  const members = new Set([...conf.voters, ...conf.learners]);
  const outside = !members.has(id);
  return addresses(state).filter((a) => (outside || members.has(a.id)) && a.id !== id);
}
