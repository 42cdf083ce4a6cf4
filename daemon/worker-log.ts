// The leader's log of workers coming and going, bounded: after a failover every host of a site
// registers within a few seconds, and a line per host (thousands) would flood the log and, with
// stdout a pipe or a socket (written synchronously by Node), could stall the leader behind a slow
// reader. The first WORKER_EVENTS_LOGGED_MAX events of each kind per window are logged one by one
// at info; the rest are counted and summed up in one line when the window ends (all at debug).

import type { LogFields, Logger } from './log.js';

/** Registrations (and disconnections) logged one by one per window; the rest in one summary line. */
export const WORKER_EVENTS_LOGGED_MAX = 20;
export const WORKER_LOG_WINDOW_MS = 1_000;

type Kind = 'registered' | 'disconnected';

export class WorkerEventLog {
  private readonly counts: Record<Kind, number> = { registered: 0, disconnected: 0 };
  private windowEnd_ms = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly log: Logger,
    private readonly now: () => number,
  ) {}

  registered(fields: LogFields & { host: string }): void {
    this.event('registered', 'worker registered', fields);
  }

  disconnected(host: string): void {
    this.event('disconnected', 'worker disconnected', { host });
  }

  private event(kind: Kind, msg: string, fields: LogFields): void {
    const now = this.now();
    if (now >= this.windowEnd_ms) {
      this.summarise();
      this.windowEnd_ms = now + WORKER_LOG_WINDOW_MS;
    }
    this.counts[kind]++;
    if (this.counts[kind] <= WORKER_EVENTS_LOGGED_MAX) this.log.info(msg, fields);
    else {
      this.log.debug(msg, fields);
      if (this.timer === null) this.timer = setTimeout(() => this.summarise(), WORKER_LOG_WINDOW_MS);
    }
  }

  /** One line for the events of the window past the first WORKER_EVENTS_LOGGED_MAX; a new window starts. */
  private summarise(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    for (const kind of ['registered', 'disconnected'] as const) {
      const more = this.counts[kind] - WORKER_EVENTS_LOGGED_MAX;
      if (more > 0)
        this.log.info(`${more} more workers ${kind} (not logged one by one)`, {
          [kind]: this.counts[kind],
          window_ms: WORKER_LOG_WINDOW_MS,
        });
      this.counts[kind] = 0;
    }
    this.windowEnd_ms = 0;
  }

  close(): void {
    this.summarise();
  }
}
