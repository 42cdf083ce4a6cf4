// When a controller takes its own snapshot: at its own phase of a grid of `every` entries, so that
// the members of one configuration do not all snapshot at the same applied index.
//
// Every member applies the same entries, so a threshold counted from a shared start (the same
// snapshot index, or 0) makes all of them encode and store a snapshot at once. On one machine, or on
// any cluster where the members share a disk or a rack's power budget, that costs every member's
// WAL flush at the same moment (measured: the fdatasyncs rise 5-10x while the LevelDB write goes
// through), and a commit needs the leader's flush and one follower's. Spread out, at most one member
// is in its snapshot at a time, and a commit can go on with the others. The phase is derived from the
// member's place in the configuration, never drawn at random, so a member's schedule is the same on
// every restart and two members of one configuration never share a phase.

import type { ConfState, NodeId } from '../../raft/types.js';

/**
 * Where in each interval of `every` entries member `id` snapshots: its place among the members
 * (voters and learners, by id) times `every / members`, rounded down. 0 for a node not in `conf`.
 */
export function snapshotPhase(id: NodeId, conf: ConfState, every: number): number {
  const members = [...new Set([...conf.voters, ...conf.learners])].sort((a, b) => a - b);
  const place = members.indexOf(id);
  if (place <= 0) return 0;
  return Math.floor((place * every) / members.length);
}

/**
 * Whether a snapshot is due at `applied`, the last one being at `last`: the first of the member's
 * points `phase + k * every` that lies at least half an interval past `last` has been reached, or one
 * and a half intervals went by. Half an interval, so that a snapshot installed from the leader (at
 * any index) just before such a point is not followed by another at once. While `every` holds still,
 * the point always comes first (it lies within [last + every/2, last + 1.5 every)), so the members'
 * snapshots stay `every / members` apart; while it grows with the jobs, the points move with it, and
 * the bound of 1.5 intervals keeps a member from chasing them. So between two of a member's
 * snapshots there are at least `every / 2` entries and at most `1.5 * every` plus the entries
 * applied in one batch.
 */
export function snapshotDue(applied: number, last: number, every: number, phase: number): boolean {
  if (applied - last >= every + Math.ceil(every / 2)) return true;
  return applied >= nextSnapshotPoint(last, every, phase);
}

/** The first index `phase + k * every` (k a whole number) at least `every / 2` past `last`. */
export function nextSnapshotPoint(last: number, every: number, phase: number): number {
  const from = last + Math.ceil(every / 2);
  return phase + Math.ceil((from - phase) / every) * every;
}
