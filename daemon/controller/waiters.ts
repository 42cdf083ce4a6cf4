// The callers waiting on the controller core: proposals (until their entry is applied) and
// linearizable reads (until their ReadIndex is applied). Each waits at most `timeout_ms`; a
// proposal is keyed by its log index and remembers its term, a read by its ReadIndex context.
//
// Every way a waiter can end is here, once: settled by apply, failed when its entry was replaced
// (a new leader's entry at its index, or a snapshot over it), timed out, or failed with everyone
// else (`failAll`: a step-down, a shutdown, a crash, a fail-stop).

import type { ApplyResult } from '../../statemachine/facts.js';
import { NodeUnavailableError } from './errors.js';
import type { ClockPort, TimerHandle } from './ports.js';

interface ProposalWaiter {
  readonly term: number;
  resolve(r: ApplyResult): void;
  reject(e: Error): void;
  readonly timer: TimerHandle;
}

interface ReadWaiter {
  resolve(): void;
  reject(e: Error): void;
  readonly timer: TimerHandle;
}

export class Waiters {
  private readonly proposals = new Map<number, ProposalWaiter>();
  private readonly reads = new Map<string, ReadWaiter>();

  constructor(
    private readonly clock: ClockPort,
    private readonly timeout_ms: number,
  ) {}

  /** Proposals waiting for their entry to be applied. */
  get proposalCount(): number {
    return this.proposals.size;
  }

  get readCount(): number {
    return this.reads.size;
  }

  /** Waits for the entry proposed at (index, term) to be applied here. */
  proposal(index: number, term: number): Promise<ApplyResult> {
    return new Promise<ApplyResult>((resolve, reject) => {
      const timer = this.expire(reject, `entry ${index} was not committed within ${this.timeout_ms} ms; retry`, () =>
        this.proposals.delete(index),
      );
      this.proposals.set(index, { term, resolve, reject, timer });
    });
  }

  /** Waits for the read with context `ctx` to be confirmed and its index applied. */
  read(ctx: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = this.expire(
        reject,
        `linearizable read not confirmed within ${this.timeout_ms} ms (no quorum?)`,
        () => this.reads.delete(ctx),
      );
      this.reads.set(ctx, { resolve, reject, timer });
    });
  }

  /** A waiter not answered within timeout_ms is forgotten (`forget`) and failed as `unavailable` (the client retries). */
  private expire(reject: (e: unknown) => void, message: string, forget: () => void): TimerHandle {
    return this.clock.setTimeout(() => {
      forget();
      reject(new NodeUnavailableError('unavailable', message));
    }, this.timeout_ms);
  }

  /**
   * The entry at `index` was applied with `result`. Its proposal is answered when the entry is the
   * one proposed (same term); an entry of another term means a new leader replaced it, and the
   * caller retries (the state machine applies a retried submit once, by session and sequence).
   */
  applied(index: number, term: number, result: ApplyResult): void {
    const w = this.proposals.get(index);
    if (w === undefined) return;
    this.proposals.delete(index);
    this.clock.clearTimeout(w.timer);
    if (w.term === term) w.resolve(result);
    else
      w.reject(
        new NodeUnavailableError(
          'unavailable',
          `the proposal at index ${index} was replaced by a new leader's entry; retry`,
        ),
      );
  }

  /** The read `ctx` is safe to serve now. */
  readDone(ctx: string): void {
    const w = this.reads.get(ctx);
    if (w === undefined) return;
    this.reads.delete(ctx);
    this.clock.clearTimeout(w.timer);
    w.resolve();
  }

  /** A snapshot replaced the log through `index`: proposals at or below it cannot be matched to
   * a result any more. */
  failThrough(index: number, reason: string): void {
    for (const [i, w] of this.proposals) {
      if (i > index) continue;
      this.proposals.delete(i);
      this.clock.clearTimeout(w.timer);
      w.reject(new NodeUnavailableError('unavailable', `${reason}; retry`));
    }
  }

  /**
   * Fails every waiter at once with a retryable error. `reason` says what happened, as a clause
   * ("node 2 stopped being the leader (term 7)"); each waiter's message says what it means for it.
   * A write may still commit under a new leader: the client's retry under the same session and
   * sequence is applied at most once, and gets the first result.
   */
  failAll(reason: string): void {
    for (const [index, w] of this.proposals) {
      this.clock.clearTimeout(w.timer);
      w.reject(
        new NodeUnavailableError(
          'unavailable',
          `${reason} before entry ${index} was committed; retry (it is applied at most once)`,
        ),
      );
    }
    this.proposals.clear();
    for (const [, r] of this.reads) {
      this.clock.clearTimeout(r.timer);
      r.reject(new NodeUnavailableError('unavailable', `${reason} before the read was confirmed; retry`));
    }
    this.reads.clear();
  }
}
