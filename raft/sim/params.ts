// The simulator's knobs: virtual time per tick and clock skew, the chaos phase's length, the
// liveness bounds after healing, and the caps on node ids, trace lines and events per seed.
// Re-exported by simulation.ts.

/** Virtual milliseconds per Raft tick. */
export const SIM_TICK_MS = 10;
/** A node's tick interval is SIM_TICK_MS ± this (clock rate skew between nodes). */
export const SIM_TICK_SKEW_MS = 2;
/** Ticks per election timeout in the simulator (the real timeout is 1x-2x this). */
export const SIM_ELECTION_TICKS = 10;
/** Bytes per snapshot chunk in the simulator: small, so that every snapshot takes several. */
export const SIM_SNAPSHOT_CHUNK_BYTES = 64;
/** Virtual time with faults injected before everything heals: drawn per seed in this range. */
export const SIM_CHAOS_MS_MIN = 1_000;
export const SIM_CHAOS_MS_MAX = 6_000;
/** After healing: a leader must be elected and a proposal committed within this virtual time. */
export const SIM_LIVENESS_BOUND_MS = 6_000;
/** After healing: every member must have applied that proposal within this virtual time. Longer,
 * because a learner added late may have to catch up hundreds of entries through the smallest flow
 * control window the simulator draws (1 message of 64 bytes in flight). */
export const SIM_CATCH_UP_BOUND_MS = 30_000;
/** Added to those bounds per entry of backlog when the probe is accepted (entries the quorum, or
 * the slowest member, still has to receive): with the smallest limits drawn (one entry per
 * MsgApp, a window of one) a follower receives about one entry per round trip. */
export const SIM_BACKLOG_MS_PER_ENTRY = 50;
/** Node ids ever used in one run (initial voters plus additions). */
export const SIM_NODE_IDS_MAX = 9;
/** Probability that a newly elected leader crashes within 40 ms (during the chaos phase). */
export const SIM_NEW_LEADER_CRASH_CHANCE = 0.15;
/** Trace lines kept for a failure report. */
export const SIM_TRACE_LINES_MAX = 400;
/** Hard cap on processed events per seed (a livelock would otherwise run forever). */
export const SIM_EVENTS_MAX = 2_000_000;
