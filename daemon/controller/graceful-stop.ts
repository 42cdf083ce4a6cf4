// The graceful stop's own steps: a leader asked to stop hands leadership to the most caught-up
// connected voter and waits (bounded by STOP_TRANSFER_MS_MAX) until it no longer leads, so that the
// cluster does not wait out an election timeout; at the end the stores are closed. Failures only log.

import type { RawNode } from '../../raft/rawnode.js';
import type { ConfState } from '../../raft/types.js';
import { STOP_TRANSFER_MS_MAX, type CoreLogger } from './core-options.js';
import type { ClockPort, LogStore, PeerPort, SnapshotStorePort } from './ports.js';

/** How often a graceful stop looks whether the transfer is done. */
const STOP_TRANSFER_POLL_MS = 20;

/** The core's options a stop uses. */
export interface StopPorts {
  readonly id: number;
  readonly peers: PeerPort;
  readonly clock: ClockPort;
  readonly log: CoreLogger;
  readonly logStore: LogStore;
  readonly snapshots: SnapshotStorePort;
}

/** What a transfer needs of the core itself. */
export interface StopTransferCore {
  readonly raw: RawNode;
  /** The membership in force. */
  readonly conf: ConfState;
  isLeader(): boolean;
  /** The core's own transferLeader (throws its typed refusal). */
  transferLeader(to: number): void;
}

/** Hands leadership away before a stop, when some connected voter can take it. */
export async function transferBeforeStop(o: StopPorts, core: StopTransferCore): Promise<void> {
  const target = bestTransferee(o, core);
  if (target === 0) return;
  o.log.info('transferring leadership before stopping', { to: target });
  try {
    core.transferLeader(target);
    const until = o.clock.now() + STOP_TRANSFER_MS_MAX;
    while (core.isLeader() && o.clock.now() < until) await sleep(o.clock, STOP_TRANSFER_POLL_MS);
  } catch (err) {
    o.log.warn('leadership transfer failed; stopping anyway', { error: (err as Error).message });
  }
}

/** Closes the log store, then the snapshot store; a failure is logged, never thrown. */
export async function closeStores(o: StopPorts): Promise<void> {
  await o.logStore.close().catch((err: unknown) => o.log.warn('closing the log store failed', { error: String(err) }));
  await o.snapshots
    .close()
    .catch((err: unknown) => o.log.warn('closing the snapshot store failed', { error: String(err) }));
}

/** The connected voter with the highest matched index (0 when none). */
function bestTransferee(o: StopPorts, core: StopTransferCore): number {
  const progress = core.raw.status().progress;
  let best = 0;
  let bestMatch = -1;
  for (const id of core.conf.voters) {
    if (id === o.id || !o.peers.connected(id)) continue;
    const match = progress.get(id)?.match ?? -1;
    if (match > bestMatch) {
      best = id;
      bestMatch = match;
    }
  }
  return best;
}

function sleep(clock: ClockPort, ms: number): Promise<void> {
  return new Promise<void>((r) => clock.setTimeout(r, ms));
}
