// Majority arithmetic over the voters of one configuration (Raft §5.2, §5.3). Learners never count.
import type { NodeId } from './types.js';

export enum VoteResult {
  Pending = 0,
  Won = 1,
  Lost = 2,
}

/** Number of votes needed among `n` voters. */
export function majority(n: number): number {
  return Math.floor(n / 2) + 1;
}

/**
 * The highest index matched by a majority of voters: sort the match indexes descending and take
 * the one at position majority-1. An empty voter set commits nothing (returns 0).
 */
export function committedIndex(voters: readonly NodeId[], matchOf: (id: NodeId) => number): number {
  const n = voters.length;
  if (n === 0) return 0;
  if (n === 1) return matchOf(voters[0]!);
  const m = new Array<number>(n);
  for (let i = 0; i < n; i++) m[i] = matchOf(voters[i]!);
  m.sort((a, b) => b - a);
  return m[majority(n) - 1]!;
}

/** Tallies votes: Won when a majority granted, Lost when a majority can no longer grant. */
export function voteResult(voters: readonly NodeId[], votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  let granted = 0;
  let rejected = 0;
  for (const id of voters) {
    const v = votes.get(id);
    if (v === true) granted++;
    else if (v === false) rejected++;
  }
  const q = majority(voters.length);
  if (granted >= q) return VoteResult.Won;
  if (voters.length - rejected < q) return VoteResult.Lost;
  return VoteResult.Pending;
}

/** Whether a majority of voters satisfies `active` (check-quorum, ReadIndex acks). */
export function quorumActive(voters: readonly NodeId[], active: (id: NodeId) => boolean): boolean {
  let n = 0;
  for (const id of voters) if (active(id)) n++;
  return n >= majority(voters.length);
}
