// The pieces of a controller core wired together (core.ts's constructor): the waiters, the
// leadership, the applier, the snapshotter, the peer frames and the Ready loop, each given the
// ports and recovered state it needs and the core's hooks back (its phase, its fail-stop, its
// listeners).

import type { RawNode } from '../../raft/rawnode.js';
import type { MemoryStorage } from '../../raft/storage.js';
import type { ConfState } from '../../raft/types.js';
import { apply as statemachineApply } from '../../statemachine/apply.js';
import type { ControllerState } from '../../statemachine/state.js';
import { Applier, type AppliedBatch } from './applier.js';
import { PROPOSAL_TIMEOUT_MS, pickPolicy, type ControllerCoreOptions } from './core-options.js';
import { Leadership } from './leadership.js';
import type { Listeners } from './listeners.js';
import { PeerFrames } from './peer-frames.js';
import { ReadyLoop } from './ready.js';
import { Snapshotter } from './snapshotter.js';
import { Waiters } from './waiters.js';

/** What recovery (recovery.ts) hands the core to start from. */
export interface RecoveredCore {
  readonly raw: RawNode;
  readonly memory: MemoryStorage;
  readonly state: ControllerState;
  readonly snapshotIndex: number;
  readonly conf: ConfState;
}

/** The core's side of the wiring. */
export interface CoreHooks {
  readonly applied: Listeners<[AppliedBatch]>;
  readonly fsync: Listeners<[seconds: number]>;
  /** The membership in force changed: relink the peers. */
  readonly membershipChanged: () => void;
  /** Something changed in Raft: run the Ready loop. */
  readonly kick: () => void;
  /** The core is running (new Readies may be handled). */
  readonly running: () => boolean;
  /** The core has neither crashed nor fail-stopped. */
  readonly live: () => boolean;
  readonly fail: (err: unknown) => void;
}

export interface CoreParts {
  readonly waiters: Waiters;
  readonly leadership: Leadership;
  readonly applier: Applier;
  readonly snapshotter: Snapshotter;
  readonly frames: PeerFrames;
  readonly loop: ReadyLoop;
}

/** Builds the pieces of a core on its options and recovered state. */
export function wireCore(opts: ControllerCoreOptions, r: RecoveredCore, hooks: CoreHooks): CoreParts {
  const { raw, memory } = r;
  const { clock, log } = opts;
  const { live, fail } = hooks;
  const accounting = opts.accounting !== undefined ? { accounting: opts.accounting } : {};
  const trace = opts.trace !== undefined ? { trace: opts.trace } : {};
  const waiters = new Waiters(clock, opts.proposalTimeout_ms ?? PROPOSAL_TIMEOUT_MS);
  const leadership = new Leadership({ id: opts.id, log, waiters });
  const applier = new Applier(
    {
      raw,
      waiters,
      apply: opts.apply ?? statemachineApply,
      clock,
      log,
      onApplied: hooks.applied,
      membershipChanged: hooks.membershipChanged,
      ...accounting,
    },
    { state: r.state, index: r.snapshotIndex, conf: r.conf },
  );
  const snapshotter = new Snapshotter(
    {
      ...pickPolicy(opts),
      id: opts.id,
      applier,
      storage: memory,
      logStore: opts.logStore,
      snapshots: opts.snapshots,
      clock,
      log,
      live,
      fail,
      ...accounting,
    },
    r.snapshotIndex,
  );
  const frames = new PeerFrames({
    id: opts.id,
    raw,
    peers: opts.peers,
    clock,
    log,
    live,
    kick: hooks.kick,
    snapshotBytesMax: opts.snapshotBytesMax,
    ...trace,
  });
  const loop = new ReadyLoop({
    raw,
    storage: memory,
    logStore: opts.logStore,
    clock,
    frames,
    applier,
    snapshotter,
    onFsync: hooks.fsync,
    softState: (s, term) => leadership.onSoftState(s, term),
    running: hooks.running,
    live,
    fail,
    ...trace,
  });
  return { waiters, leadership, applier, snapshotter, frames, loop };
}
