// The client API's fair scheduler: requests are started round robin over the connections, a
// bounded number (and milliseconds) per event-loop turn, so that the Raft tick and peer messages
// run between two batches; the heavy-operation slots; and WorkSlicer for an operation's own loop.

import { performance } from 'node:perf_hooks';
import type { AdmissionClock, AdmissionLimits } from './api-admission-limits.js';

/** What the scheduler needs of a connection. */
export interface Schedulable {
  /** It has requests waiting (it may not be able to start one now). */
  hasWork(): boolean;
  /** Starts its next request if it may now; false when it may not (it waits for an event). */
  tryStart(): boolean;
}

export type SchedulerLimits = Pick<
  AdmissionLimits,
  'requestsPerTurn' | 'requestsPerConnectionTurn' | 'turnBudget_ms' | 'heavyInflightMax'
>;

export class ApiScheduler<C extends Schedulable> {
  /** Connections with requests waiting, in round-robin order (one served moves to the end). */
  private readonly ready = new Set<C>();
  private pumpScheduled = false;
  private heavy = 0;

  constructor(
    private readonly limits: SchedulerLimits,
    private readonly clock: AdmissionClock,
  ) {}

  /** API_HEAVY_OPS requests in progress. */
  get heavyInflight(): number {
    return this.heavy;
  }

  /** Whether a heavy request may start now. */
  heavySlotFree(): boolean {
    return this.heavy < this.limits.heavyInflightMax;
  }

  heavyStarted(): void {
    this.heavy++;
  }

  heavyDone(): void {
    this.heavy--;
    this.wakeAll();
  }

  /** The connection has requests that may be startable: it takes its turn. */
  wake(c: C): void {
    if (!c.hasWork()) return;
    this.ready.add(c);
    this.schedule();
  }

  /** Something every waiting connection may wait for was freed (a heavy slot, the total backlog). */
  wakeAll(): void {
    if (this.ready.size > 0) this.schedule();
  }

  /** The connection is gone: it takes no more turns. */
  forget(c: C): void {
    this.ready.delete(c);
  }

  private schedule(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    this.clock.defer(() => this.pump());
  }

  /**
   * One turn: starts requests round robin, one per connection per pass, until the turn's count or
   * time is used, or no waiting connection can start one. Another turn follows (setImmediate)
   * only when this one started something; a connection that could not start waits for the event
   * that frees it (an answer sent, a request done, a heavy slot), which wakes the scheduler.
   */
  pump(): void {
    this.pumpScheduled = false;
    const L = this.limits;
    const t0 = this.clock.elapsed();
    const startedBy = new Map<C, number>();
    let started = 0;
    let progress = true;
    outer: while (progress) {
      progress = false;
      for (const c of [...this.ready]) {
        if (!c.hasWork()) {
          this.ready.delete(c);
          continue;
        }
        const mine = startedBy.get(c) ?? 0;
        if (mine >= L.requestsPerConnectionTurn) continue;
        if (!c.tryStart()) continue;
        startedBy.set(c, mine + 1);
        started++;
        progress = true;
        this.ready.delete(c); // to the end of the round
        if (c.hasWork()) this.ready.add(c);
        if (started >= L.requestsPerTurn || this.clock.elapsed() - t0 >= L.turnBudget_ms) break outer;
      }
    }
    if (started > 0 && this.ready.size > 0) this.schedule();
  }
}

/** Milliseconds of synchronous work an operation that walks many jobs does before it lets a turn of the event loop pass (the Raft tick is 50 ms). */
export const API_SLICE_MS = 5;

/**
 * For an operation that walks every job (`jobs.list` with a filter over a large state): in its
 * loop, `if ((++n & 255) === 0 && slicer.due()) await slicer.yield();` keeps each turn under
 * API_SLICE_MS. The state may be applied further between two slices, so the walk must tolerate a
 * job that is gone (a read that sees a later state than its barrier is still linearizable).
 */
export class WorkSlicer {
  private start = performance.now();

  constructor(readonly slice_ms = API_SLICE_MS) {}

  due(): boolean {
    return performance.now() - this.start >= this.slice_ms;
  }

  async yield(): Promise<void> {
    await new Promise((r) => setImmediate(r));
    this.start = performance.now();
  }
}
