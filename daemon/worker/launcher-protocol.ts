// The messages between the worker and its launcher process (launcher.ts, launcher-main.ts), over
// Node's IPC channel (JSON). Each side sends what it has in one turn of its event loop as one IPC
// message, an array in order (a burst of jobs costs one write and one wakeup, not one per message).
// The types, and the outbox both sides batch with; the launcher loads nothing of the worker's but
// this file and layer-child.ts.

import type { SpawnRequest } from './layer-child.js';

/** Worker → launcher: start a layer's process; send a signal to the group of one it started. */
export type ToLauncher =
  | { readonly t: 'spawn'; readonly id: number; readonly req: SpawnRequest }
  | { readonly t: 'signal'; readonly id: number; readonly signal: NodeJS.Signals };

/** Launcher → worker: what became of a process it started (layer-child.ts's ChildEvents, in order). */
export type FromLauncher =
  | { readonly t: 'spawned'; readonly id: number; readonly pid: number; readonly procStart: string | null }
  | { readonly t: 'failed'; readonly id: number; readonly message: string }
  | { readonly t: 'output'; readonly id: number; readonly base64: string }
  | { readonly t: 'setUp'; readonly id: number }
  | {
      readonly t: 'ended';
      readonly id: number;
      readonly exitCode: number | null;
      readonly signal: string | null;
      /** It was killed because the launcher's native spawner died, saying so (ChildEvents.ended). */
      readonly lost?: string;
    };

/**
 * What one side sends in this turn of its event loop, sent as one IPC message (an array, in order)
 * once the turn is over: `send` is handed each batch.
 */
export class TurnOutbox<M> {
  private batch: M[] = [];

  constructor(private readonly send: (batch: M[]) => void) {}

  push(m: M): void {
    if (this.batch.length === 0) setImmediate(() => this.flush());
    this.batch.push(m);
  }

  /** Drops what is queued (its receiver is gone). */
  clear(): void {
    this.batch = [];
  }

  private flush(): void {
    const batch = this.batch;
    this.batch = [];
    if (batch.length > 0) this.send(batch);
  }
}
