// When a controller takes its own snapshot: at its own phase of a grid of `every` entries, so that
// the members of one configuration do not all snapshot at the same applied index.
//
// Every member applies the same entries, so a threshold counted from a shared start (the same
// snapshot index, or 0) makes all of them encode and store a snapshot at once. Where the members
// share cores or a disk (one machine here), the three encodes compete for the same cores and the
// three LevelDB writes for the same flushes as every member's WAL (benchmarks/README.md, latency
// parts 3 and 5), and a commit needs the leader's flush and one follower's. Spread out, one member
// at a time is in its snapshot, and a commit can go on with the others. The phase is derived from
// the member's place in the configuration, never drawn at random, so a member's schedule is the
// same on every restart and two members of one configuration never share a phase.

import type { ConfState, NodeId } from '../../raft/types.js';

/** The least interval of a controller's own snapshots, in applied entries. */
export const SNAPSHOT_EVERY_ENTRIES_DEFAULT = 10_000;

/**
 * The interval in force until a member's next snapshot: `fixed` when one is configured, else
 * max(SNAPSHOT_EVERY_ENTRIES_DEFAULT, the jobs in the member's last snapshot). Linear in the jobs, so
 * that the encoding (linear in the state) stays a bounded share of the work per entry; taken from the
 * last snapshot and held until the next, not from the jobs now: where every entry adds a job (a flood
 * of pending submits, no job removed), an interval counted from the jobs now grows as fast as the log
 * and is never reached again, and the log would grow without end. Held, it is reached within 1.5
 * intervals, and the intervals double at most from one snapshot to the next.
 */
export function snapshotInterval(fixed: number | undefined, jobsAtLastSnapshot: number): number {
  return fixed ?? Math.max(SNAPSHOT_EVERY_ENTRIES_DEFAULT, jobsAtLastSnapshot);
}

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
 * snapshots stay `every / members` apart. So between two of a member's snapshots there are at least
 * `every / 2` entries and at most `1.5 * every` plus the entries applied in one batch. The caller
 * holds `every` still from one snapshot to the next (snapshotInterval).
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
