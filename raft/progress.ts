// What a leader knows about one follower: how far its log matches, what to send next, and the flow
// control state (probe / replicate / snapshot) with a bounded in-flight window.
import { assert } from './errors.js';

export enum ProgressState {
  /** We do not know where the follower's log matches: one MsgApp per heartbeat until it answers. */
  Probe = 0,
  /** The follower is in sync: stream MsgApps optimistically, bounded by the in-flight window. */
  Replicate = 1,
  /** The follower needs a snapshot; nothing else is sent until it is reported done or failed. */
  Snapshot = 2,
}

/** A ring of in-flight MsgApps (their last index and byte size), bounded by count and bytes. */
export class Inflights {
  private readonly indexes: number[];
  private readonly sizes: number[];
  private start = 0;
  count = 0;
  bytes = 0;

  constructor(
    readonly maxCount: number,
    readonly maxBytes: number,
  ) {
    this.indexes = new Array<number>(maxCount).fill(0);
    this.sizes = new Array<number>(maxCount).fill(0);
  }

  add(lastIndex: number, bytes: number): void {
    assert(!this.full(), 'inflights.add on a full window');
    if (this.count > 0) {
      const prev = this.indexes[(this.start + this.count - 1) % this.maxCount]!;
      assert(lastIndex > prev, 'inflight indexes increase');
    }
    const at = (this.start + this.count) % this.maxCount;
    this.indexes[at] = lastIndex;
    this.sizes[at] = bytes;
    this.count++;
    this.bytes += bytes;
  }

  /** Frees every in-flight message whose last index is <= `index` (acknowledged). */
  freeLE(index: number): void {
    while (this.count > 0 && this.indexes[this.start]! <= index) {
      this.bytes -= this.sizes[this.start]!;
      this.start = (this.start + 1) % this.maxCount;
      this.count--;
    }
    if (this.count === 0) {
      this.start = 0;
      this.bytes = 0;
    }
  }

  /** Frees the oldest slot: a heartbeat answer proves the follower is alive, and a lost MsgApp
   * would otherwise keep a full window full forever. */
  freeFirstOne(): void {
    if (this.count > 0) this.freeLE(this.indexes[this.start]!);
  }

  full(): boolean {
    return this.count >= this.maxCount || this.bytes >= this.maxBytes;
  }

  reset(): void {
    this.start = 0;
    this.count = 0;
    this.bytes = 0;
  }
}

export class Progress {
  /** Highest index known to match the leader's log. */
  match = 0;
  /** Next index to send. Invariant: match < next. */
  next: number;
  state = ProgressState.Probe;
  /** In Snapshot state: the index of the snapshot being sent. */
  pendingSnapshot = 0;
  /** Heard from since the last check-quorum round. */
  recentActive = false;
  /** Probe state: a MsgApp is out, wait for an answer (or the next heartbeat). */
  probeSent = false;
  /** `match` when the follower last answered a heartbeat (step-leader.ts: did it move since?). */
  matchAtHeartbeat = 0;
  /** A MsgApp went to this follower since the last heartbeat tick (replication.ts bcastHeartbeat). */
  appendSinceBeat = false;
  isLearner: boolean;
  readonly inflights: Inflights;

  constructor(next: number, isLearner: boolean, maxInflightMsgs: number, maxInflightBytes: number) {
    this.next = next;
    this.isLearner = isLearner;
    this.inflights = new Inflights(maxInflightMsgs, maxInflightBytes);
  }

  private resetState(state: ProgressState): void {
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.state = state;
    this.inflights.reset();
  }

  becomeProbe(): void {
    // After a snapshot, probe from just after it (or after match if that is further).
    if (this.state === ProgressState.Snapshot) {
      const snap = this.pendingSnapshot;
      this.resetState(ProgressState.Probe);
      this.next = Math.max(this.match + 1, snap + 1);
    } else {
      this.resetState(ProgressState.Probe);
      this.next = this.match + 1;
    }
  }

  becomeReplicate(): void {
    this.resetState(ProgressState.Replicate);
    this.next = this.match + 1;
  }

  becomeSnapshot(snapIndex: number): void {
    this.resetState(ProgressState.Snapshot);
    this.pendingSnapshot = snapIndex;
  }

  /** An acknowledgement up to `n`. Returns false when it is stale (n <= match). */
  maybeUpdate(n: number): boolean {
    let updated = false;
    if (this.match < n) {
      this.match = n;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, n + 1);
    return updated;
  }

  /** A MsgApp with entries up to `lastIndex` (and `bytes` of them) went out. */
  sentEntries(lastIndex: number, count: number, bytes: number): void {
    if (this.state === ProgressState.Replicate) {
      if (count > 0) {
        this.next = lastIndex + 1;
        this.inflights.add(lastIndex, bytes);
      }
    } else if (this.state === ProgressState.Probe) {
      this.probeSent = true;
    } else {
      assert(false, 'no MsgApp is sent in Snapshot state');
    }
  }

  /**
   * A rejection of the MsgApp whose previous index was `rejected`; `matchHint` is the highest index
   * that may still match (from the follower's conflict hint). Returns false when stale.
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === ProgressState.Replicate) {
      // Stale: that index is already known to match.
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    // Probe: only the answer to the outstanding probe (prev index = next - 1) counts.
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }

  /** Whether sending MsgApp is blocked by flow control. */
  isPaused(): boolean {
    switch (this.state) {
      case ProgressState.Probe:
        return this.probeSent;
      case ProgressState.Replicate:
        return this.inflights.full();
      default:
        return true;
    }
  }

  describe(): string {
    return `${ProgressState[this.state]} match=${this.match} next=${this.next}${this.isLearner ? ' learner' : ''}${
      this.state === ProgressState.Snapshot ? ` snap=${this.pendingSnapshot}` : ''
    } inflight=${this.inflights.count}`;
  }
}
