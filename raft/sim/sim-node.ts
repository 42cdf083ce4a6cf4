// One simulated member: its RawNode (absent while crashed), the durable storage that survives a
// crash, the incarnation number that voids a dead incarnation's scheduled events, and a toy state
// machine (an applied index and a hash chain of what it applied) with its snapshot encoding.
import { StateType } from '../raft.js';
import type { RawNode, Ready } from '../rawnode.js';
import { SnapshotAssembler } from '../snapshot-chunks.js';
import type { MemoryStorage } from '../storage.js';
import type { NodeId } from '../types.js';
import { SIM_TICK_MS } from './params.js';

export class SimNode {
  raw: RawNode | undefined = undefined;
  alive = false;
  inc = 0;
  outstanding: Ready | undefined = undefined;
  assembler = new SnapshotAssembler();
  /** The simulated state machine: applied index and a hash chain of everything applied. */
  smApplied = 0;
  smState = 0;
  /** Commit index already reported to the checker. */
  checkedCommit = 0;
  lastState = StateType.Follower;
  lastTerm = 0;
  /** This node's tick interval: clocks run at slightly different rates. */
  tickMs = SIM_TICK_MS;
  constructor(
    readonly id: NodeId,
    /** The durable state: written only when a Ready is persisted, kept across crashes. */
    readonly storage: MemoryStorage,
  ) {}
}

export function encodeSmSnapshot(index: number, state: number, padding: number): Uint8Array {
  const b = new Uint8Array(8 + padding);
  const v = new DataView(b.buffer);
  v.setUint32(0, index, true);
  v.setUint32(4, state, true);
  for (let i = 0; i < padding; i++) b[8 + i] = (index + i) & 0xff;
  return b;
}

export function decodeSmSnapshot(data: Uint8Array): { index: number; state: number } {
  if (data.byteLength < 8) return { index: 0, state: 0 };
  const v = new DataView(data.buffer, data.byteOffset, data.byteLength);
  return { index: v.getUint32(0, true), state: v.getUint32(4, true) };
}
