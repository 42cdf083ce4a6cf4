// The safety properties of Raft (paper Figure 3), checked incrementally after every simulated
// step. A violation throws SimViolation, which the simulator reports with the seed and the trace.
import type { RaftLog } from '../log.js';
import type { Storage } from '../storage.js';
import type { Entry, NodeId } from '../types.js';

export type ViolationKind =
  | 'election-safety'
  | 'log-matching'
  | 'leader-completeness'
  | 'state-machine-safety'
  | 'committed-entry-lost'
  | 'read-linearizability'
  | 'liveness'
  | 'invariant';

export class SimViolation extends Error {
  override readonly name = 'SimViolation';
  constructor(
    readonly kind: ViolationKind,
    detail: string,
  ) {
    super(`${kind}: ${detail}`);
  }
}

/** FNV-1a over an entry's type and payload: identifies an entry's content cheaply. */
export function entryHash(e: Entry): number {
  let h = 0x811c9dc5 ^ e.type;
  h = Math.imul(h, 0x01000193);
  const d = e.data;
  for (let i = 0; i < d.length; i++) {
    h ^= d[i]!;
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The simulated state machine's state after applying `e` on top of `prev`. */
export function chainHash(prev: number, e: Entry): number {
  let h = Math.imul(prev ^ e.index, 0x9e3779b1);
  h = Math.imul(h ^ e.term, 0x85ebca6b);
  h = Math.imul(h ^ entryHash(e), 0xc2b2ae35);
  return (h ^ (h >>> 15)) >>> 0;
}

export class SafetyChecker {
  /** Election safety: the one leader of each term. */
  private readonly leaderOfTerm = new Map<number, NodeId>();
  /** Log matching: (index, term) → content hash and the term of the entry before it. */
  private readonly entryAt = new Map<string, { hash: number; prevTerm: number | undefined }>();
  /** Committed entries ever observed: index → term and hash (index 0 unused). */
  readonly committedTerm: number[] = [];
  private readonly committedHash: number[] = [];
  /** index → the lowest current term of a node seen holding that entry as committed: the entry was
   * committed in this term or earlier. */
  private readonly committedBy: number[] = [];
  /** The highest index known committed anywhere. */
  maxCommitted = 0;
  /** State machine safety: index → the entry every node applies there, and the state after it. */
  private readonly appliedHash: number[] = [];
  private readonly stateAfter: number[] = [];

  onLeader(id: NodeId, term: number, log: RaftLog): void {
    const prev = this.leaderOfTerm.get(term);
    if (prev !== undefined && prev !== id) {
      throw new SimViolation('election-safety', `nodes ${prev} and ${id} both lead term ${term}`);
    }
    this.leaderOfTerm.set(term, id);
    // Leader completeness (§5.4): the leader of `term` holds every entry committed in an earlier
    // term. (A leader of a LOWER term than a commit — a candidate whose delayed votes arrive after
    // a later term committed — need not: it can never commit anything itself.)
    for (let i = this.maxCommitted; i >= 1; i--) {
      const t = this.committedTerm[i];
      const by = this.committedBy[i];
      if (t === undefined || by === undefined || by >= term) continue;
      if (log.lastIndex() < i) {
        throw new SimViolation(
          'leader-completeness',
          `leader ${id} of term ${term} has lastIndex ${log.lastIndex()} < ${i}, committed by term ${by}`,
        );
      }
      break;
    }
    for (let i = log.firstIndex(); i <= this.maxCommitted; i++) {
      const t = this.committedTerm[i];
      const by = this.committedBy[i];
      if (t === undefined || by === undefined || by >= term) continue;
      if (log.term(i) !== t) {
        throw new SimViolation(
          'leader-completeness',
          `leader ${id} of term ${term} has term ${log.term(i)} at committed index ${i} (committed term ${t})`,
        );
      }
    }
  }

  /** Every entry a node persists: same index and term ⇒ same content and same predecessor.
   * `durableTerm` answers from the node's durable log after the append (not from its in-memory
   * log, which may already have moved on while the write was in flight). */
  onPersisted(id: NodeId, entries: readonly Entry[], durableTerm: (index: number) => number | undefined): void {
    for (const e of entries) {
      const key = `${e.index}:${e.term}`;
      const hash = entryHash(e);
      const prevTerm = durableTerm(e.index - 1);
      const seen = this.entryAt.get(key);
      if (seen === undefined) {
        this.entryAt.set(key, { hash, prevTerm });
        continue;
      }
      if (seen.hash !== hash) {
        throw new SimViolation('log-matching', `node ${id} holds a different entry at index ${e.index} term ${e.term}`);
      }
      if (seen.prevTerm !== undefined && prevTerm !== undefined && seen.prevTerm !== prevTerm) {
        throw new SimViolation(
          'log-matching',
          `node ${id}: entry ${e.index}/t${e.term} follows term ${prevTerm}, elsewhere term ${seen.prevTerm}`,
        );
      }
    }
  }

  /** A node in term `nodeTerm` saw its commit index move from `from` to `to`: record (or compare)
   * those entries. */
  onCommitted(id: NodeId, log: RaftLog, from: number, to: number, nodeTerm: number): void {
    for (let i = from + 1; i <= to; i++) {
      const t = log.term(i);
      if (t === undefined) continue; // inside a snapshot: checked via the state machine
      const ents = log.slice(i, i + 1, Infinity);
      if (ents === undefined || ents.length !== 1) continue;
      const h = entryHash(ents[0]!);
      const known = this.committedTerm[i];
      const by = this.committedBy[i];
      if (by === undefined || nodeTerm < by) this.committedBy[i] = nodeTerm;
      if (known === undefined) {
        this.committedTerm[i] = t;
        this.committedHash[i] = h;
      } else if (known !== t || this.committedHash[i] !== h) {
        throw new SimViolation(
          'committed-entry-lost',
          `node ${id} committed ${i}/t${t}, but ${i}/t${known} was committed before (a committed entry was replaced)`,
        );
      }
    }
    if (to > this.maxCommitted) this.maxCommitted = to;
  }

  onApplied(id: NodeId, e: Entry, stateAfter: number): void {
    const h = entryHash(e) ^ Math.imul(e.term, 0x27d4eb2d);
    const known = this.appliedHash[e.index];
    if (known === undefined) {
      this.appliedHash[e.index] = h;
      this.stateAfter[e.index] = stateAfter;
      return;
    }
    if (known !== h || this.stateAfter[e.index] !== stateAfter) {
      throw new SimViolation(
        'state-machine-safety',
        `node ${id} applied a different entry (or state) at index ${e.index}`,
      );
    }
  }

  onRestored(id: NodeId, index: number, state: number): void {
    const known = this.stateAfter[index];
    if (known !== undefined && known !== state) {
      throw new SimViolation('state-machine-safety', `node ${id} restored a snapshot at ${index} whose state differs`);
    }
    if (known === undefined) this.stateAfter[index] = state;
  }

  leaderOf(term: number): NodeId | undefined {
    return this.leaderOfTerm.get(term);
  }
}

/** Term lookup on a storage, undefined when compacted or absent. */
export function storageTerm(s: Storage): (index: number) => number | undefined {
  return (index) => {
    try {
      return s.term(index);
    } catch {
      return undefined;
    }
  };
}
