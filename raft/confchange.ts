// Membership change, one server at a time (Raft thesis §4.1), plus non-voting learners (§4.2.1).
// A change takes effect on each node when the node APPLIES its log entry (the caller calls
// RawNode.applyConfChange). Safety of applying-at-apply-time rests on two rules the leader keeps:
// only one change is pending at a time, and a new leader proposes none before it has applied
// everything up to its election (which covers its own no-op of the new term).
import type { ConfState, NodeId } from './types.js';
import { NONE } from './types.js';

export enum ConfChangeType {
  /** Add a voter, or promote an existing learner to voter. */
  AddVoter = 0,
  /** Add a non-voting learner (it receives the log but never votes or counts for commit). */
  AddLearner = 1,
  /** Remove a voter or a learner. */
  RemoveNode = 2,
}

export interface ConfChange {
  readonly type: ConfChangeType;
  readonly nodeId: NodeId;
}

/** Why a membership change cannot apply to a configuration. */
export class ConfChangeError extends Error {
  override readonly name = 'ConfChangeError';
  constructor(
    readonly change: ConfChange,
    message: string,
  ) {
    super(`membership change ${ConfChangeType[change.type] ?? change.type}(${change.nodeId}): ${message}`);
  }
}

const CONF_CHANGE_VERSION = 1;
const CONF_CHANGE_BYTES = 6;

/** Encodes a ConfChange as the `data` of a ConfChange entry: [version u8][type u8][node id u32 LE]. */
export function encodeConfChange(cc: ConfChange): Uint8Array {
  const b = new Uint8Array(CONF_CHANGE_BYTES);
  const v = new DataView(b.buffer);
  v.setUint8(0, CONF_CHANGE_VERSION);
  v.setUint8(1, cc.type);
  v.setUint32(2, cc.nodeId, true);
  return b;
}

export function decodeConfChange(data: Uint8Array): ConfChange {
  if (data.byteLength !== CONF_CHANGE_BYTES || data[0] !== CONF_CHANGE_VERSION) {
    throw new RangeError(`not an encoded ConfChange (length ${data.byteLength}, version ${data[0]})`);
  }
  const v = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const type = v.getUint8(1);
  if (type > ConfChangeType.RemoveNode) throw new RangeError(`unknown ConfChange type ${type}`);
  return { type: type as ConfChangeType, nodeId: v.getUint32(2, true) };
}

/** Checks a change against a configuration; returns the error, or undefined when it applies. */
export function checkConfChange(conf: ConfState, cc: ConfChange): ConfChangeError | undefined {
  if (!Number.isSafeInteger(cc.nodeId) || cc.nodeId === NONE || cc.nodeId < 0 || cc.nodeId > 0xffffffff) {
    return new ConfChangeError(cc, 'node id must be an integer in 1..2^32-1');
  }
  const isVoter = conf.voters.includes(cc.nodeId);
  const isLearner = conf.learners.includes(cc.nodeId);
  switch (cc.type) {
    case ConfChangeType.AddVoter:
      if (isVoter) return new ConfChangeError(cc, 'the node is already a voter');
      return undefined;
    case ConfChangeType.AddLearner:
      if (isLearner) return new ConfChangeError(cc, 'the node is already a learner');
      if (isVoter)
        return new ConfChangeError(cc, 'the node is a voter; demoting a voter is not supported, remove it first');
      return undefined;
    case ConfChangeType.RemoveNode:
      if (!isVoter && !isLearner) return new ConfChangeError(cc, 'the node is not a member');
      if (isVoter && conf.voters.length === 1) {
        return new ConfChangeError(cc, 'it is the last voter; add another voter first');
      }
      return undefined;
    default:
      return new ConfChangeError(cc, 'unknown change type');
  }
}

/** The configuration after `cc` (which must pass checkConfChange). Lists stay sorted. */
export function applyToConf(conf: ConfState, cc: ConfChange): ConfState {
  const voters = conf.voters.filter((id) => id !== cc.nodeId);
  const learners = conf.learners.filter((id) => id !== cc.nodeId);
  if (cc.type === ConfChangeType.AddVoter) voters.push(cc.nodeId);
  else if (cc.type === ConfChangeType.AddLearner) learners.push(cc.nodeId);
  voters.sort((a, b) => a - b);
  learners.sort((a, b) => a - b);
  return { voters, learners };
}

export function describeConf(c: ConfState): string {
  return `voters=[${c.voters.join(',')}]${c.learners.length > 0 ? ` learners=[${c.learners.join(',')}]` : ''}`;
}
