// The leader's `peek` requests to workers (`xcecli jobs peek`, daemon/api/peek.ts): each sent over
// the host's `/worker` connection with a request id, answered by the worker's `peek-data` with
// that id, or given up after PEEK_TIMEOUT_MS. Bounded: at most PEEKS_IN_FLIGHT_MAX at once.

import type { ControllerToWorkerFrame, PeekDataFrame } from './worker-protocol.js';

/** How long the leader waits for a worker's answer to a `peek`. */
export const PEEK_TIMEOUT_MS = 5_000;
/** Peeks in flight at once over all workers (each holds a promise and a timer). */
export const PEEKS_IN_FLIGHT_MAX = 256;

/** No answer to a peek could be had from the worker (the reason says why). */
export class PeekUnavailable extends Error {
  override readonly name = 'PeekUnavailable';
}

export interface PeekQuery {
  readonly jobId: number;
  readonly run: number;
  readonly offset?: number;
  readonly maxBytes: number;
}

interface Waiting {
  readonly host: string;
  readonly resolve: (f: PeekDataFrame) => void;
  readonly timer: ReturnType<typeof setTimeout>;
}

export class PeekRequests {
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;

  /** Sends a peek to `host` through `send` (null: its worker is not connected) and waits for the answer. */
  ask(host: string, q: PeekQuery, send: ((f: ControllerToWorkerFrame) => void) | null): Promise<PeekDataFrame> {
    if (send === null)
      return Promise.reject(new PeekUnavailable(`the worker of host ${host} is not connected to the leader`));
    if (this.waiting.size >= PEEKS_IN_FLIGHT_MAX)
      return Promise.reject(new PeekUnavailable(`${PEEKS_IN_FLIGHT_MAX} peeks are in flight; try again`));
    const requestId = this.nextId++;
    return new Promise<PeekDataFrame>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(requestId);
        reject(new PeekUnavailable(`the worker of host ${host} did not answer the peek within ${PEEK_TIMEOUT_MS} ms`));
      }, PEEK_TIMEOUT_MS);
      this.waiting.set(requestId, { host, resolve, timer });
      send({ type: 'peek', requestId, ...q });
    });
  }

  /** A worker's `peek-data`: resolves the peek it answers (a late one, or another host's, is dropped). */
  answer(host: string, f: PeekDataFrame): void {
    const w = this.waiting.get(f.requestId);
    if (w === undefined || w.host !== host) return;
    this.waiting.delete(f.requestId);
    clearTimeout(w.timer);
    w.resolve(f);
  }
}
