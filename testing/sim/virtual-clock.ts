// Virtual time for the controller simulator. One `SimScheduler` holds every pending event of a run
// in raft/sim's EventQueue (ordered by virtual time, then by the order scheduled), so a run
// depends only on its seed. Each controller incarnation gets its own `NodeClock` (the ClockPort
// the core uses): its timers are events in that queue, and a crash kills the clock, so that no
// timer of a dead incarnation ever fires.

import { EventQueue } from '../../raft/sim/event-queue.js';
import type { ClockPort, TimerHandle } from '../../daemon/controller/ports.js';

/** An event: a function to run at its virtual time, with a label for the trace. */
export interface SimEvent {
  readonly label: string;
  readonly run: () => void;
}

/** The run's event queue and its virtual now. */
export class SimScheduler {
  private readonly q = new EventQueue<SimEvent>();
  /** Virtual milliseconds since the start of the run. */
  nowMs = 0;
  /** Events run so far. */
  events = 0;

  get size(): number {
    return this.q.size;
  }

  /** Runs `run` `delayMs` from now (0: after everything already due now). */
  after(delayMs: number, label: string, run: () => void): void {
    if (!(delayMs >= 0)) throw new RangeError(`an event cannot be scheduled ${delayMs} ms in the past (${label})`);
    this.q.push(this.nowMs + delayMs, { label, run });
  }

  /** The next event, with the clock moved to its time; undefined when none is left. */
  next(): SimEvent | undefined {
    const item = this.q.pop();
    if (item === undefined) return undefined;
    this.nowMs = item.timeMs;
    this.events++;
    return item.event;
  }
}

interface Timer {
  readonly id: number;
  cancelled: boolean;
}

/** Milliseconds of the epoch at virtual time 0: facts carry leader times near 2025-12-01. */
export const SIM_EPOCH_MS = 1_764_547_200_000;

/**
 * One controller incarnation's clock. `offsetMs` skews its wall clock from the others' (leaders'
 * clocks disagree a little; the state machine must only ever take the log's time forward).
 */
export class NodeClock implements ClockPort {
  private alive = true;
  private nextId = 1;
  private readonly live = new Set<Timer>();

  constructor(
    private readonly sched: SimScheduler,
    private readonly label: string,
    private readonly offsetMs = 0,
  ) {}

  now(): number {
    return SIM_EPOCH_MS + this.sched.nowMs + this.offsetMs;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const t: Timer = { id: this.nextId++, cancelled: false };
    if (!this.alive) return { id: t };
    this.live.add(t);
    this.sched.after(Math.max(0, ms), `${this.label} timeout`, () => {
      if (t.cancelled || !this.alive) return;
      this.live.delete(t);
      fn();
    });
    return { id: t };
  }

  clearTimeout(h: TimerHandle): void {
    const t = h.id as Timer;
    t.cancelled = true;
    this.live.delete(t);
  }

  setInterval(fn: () => void, ms: number): TimerHandle {
    if (!(ms > 0)) throw new RangeError(`an interval must be positive, got ${ms} ms`);
    const t: Timer = { id: this.nextId++, cancelled: false };
    if (!this.alive) return { id: t };
    this.live.add(t);
    const fire = (): void => {
      if (t.cancelled || !this.alive) return;
      // Rescheduled before running, as Node does: a callback that clears it cancels the next one.
      this.sched.after(ms, `${this.label} interval`, fire);
      fn();
    };
    this.sched.after(ms, `${this.label} interval`, fire);
    return { id: t };
  }

  clearInterval(h: TimerHandle): void {
    this.clearTimeout(h);
  }

  defer(fn: () => void): void {
    if (!this.alive) return;
    this.sched.after(0, `${this.label} defer`, () => {
      if (this.alive) fn();
    });
  }

  /** The incarnation died: none of its timers fires again. */
  kill(): void {
    this.alive = false;
    for (const t of this.live) t.cancelled = true;
    this.live.clear();
  }

  /** Timers still armed (tests). */
  get armed(): number {
    return this.live.size;
  }
}
