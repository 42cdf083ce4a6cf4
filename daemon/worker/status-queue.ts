// The statuses a worker owes the leader: each job event becomes a status frame, kept until a
// `status-ack` names it, saved before it is first sent (a group commit: one save at a time, each
// taking every change made while the one before it was written), sent on each registration and
// re-sent every statusResend_ms, so a controller failover loses none.

import { REASON_BYTES_MAX, type StatusFrame, statusIdOf, type WorkerToControllerFrame } from '../worker-protocol.js';
import type { JobEvent } from './executor.js';

export const STATUS_RESEND_MS_DEFAULT = 2_000;
/** Statuses sent per resend round (the rest go in the next round). */
export const STATUS_SEND_BATCH_MAX = 1_000;
/**
 * Statuses kept while no leader acknowledges them. At this bound new starts are refused (the ack
 * says why, and no status is added for them), so a worker cut off from every leader does not grow
 * without limit.
 */
export const PENDING_STATUSES_MAX = 65_536;

interface PendingStatus {
  frame: StatusFrame;
  /** When it was last written to a registered connection; 0: not yet on this connection; -1: not yet saved. */
  sentAt: number;
}

export interface StatusQueueOptions {
  readonly now: () => number;
  readonly statusResend_ms?: number;
}

export interface StatusQueueHooks {
  /** Writes the state file (statuses and runs) as they are when called; resolves once it is durable. */
  save(): Promise<void>;
  /** How to send on the registered connection now; null when there is none. */
  sender(): ((frame: WorkerToControllerFrame) => boolean) | null;
}

export class StatusQueue {
  private readonly pending = new Map<string, PendingStatus>();
  private saveScheduled = false;
  /** A save is being written; `saveAgain`: something changed since it began. */
  private saving = false;
  private saveAgain = false;
  private ackWaiters: Array<() => void> = [];
  private resendTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly opts: StatusQueueOptions,
    private readonly hooks: StatusQueueHooks,
  ) {}

  /** Statuses not yet acknowledged. */
  get size(): number {
    return this.pending.size;
  }

  /** Statuses not yet acknowledged, oldest first. */
  unacked(): StatusFrame[] {
    return [...this.pending.values()].map((p) => p.frame);
  }

  start(): void {
    this.resendTimer = setInterval(() => this.flush(false), this.opts.statusResend_ms ?? STATUS_RESEND_MS_DEFAULT);
  }

  /** Nothing more is saved or sent. */
  close(): void {
    this.stopped = true;
    clearInterval(this.resendTimer);
    this.resendTimer = undefined;
  }

  /** Statuses from the state file (saved already). */
  restore(frames: readonly StatusFrame[]): void {
    for (const f of frames) this.pending.set(f.statusId, { frame: f, sentAt: 0 });
  }

  /**
   * Write-ahead: a status is saved before it is first sent. Everything that changes in one turn of
   * the event loop, or while the save before is being written, shares one save (its fsyncs do not
   * block the event loop), so a burst of job events costs one write, not one each.
   */
  queue(frame: StatusFrame): void {
    this.pending.set(frame.statusId, { frame, sentAt: -1 });
    this.scheduleSave();
  }

  ack(statusId: string): void {
    if (this.pending.delete(statusId)) {
      this.scheduleSave();
      if (this.pending.size === 0) for (const w of this.ackWaiters.splice(0)) w();
    }
  }

  /** A new registration: every saved status is sent on it. */
  onRegistered(): void {
    for (const p of this.pending.values()) if (p.sentAt !== -1) p.sentAt = 0;
    this.flush(true);
  }

  /**
   * Saves the state in the next turn of the event loop (once, however many changes), or after the
   * save being written, then sends the statuses that save holds.
   */
  scheduleSave(): void {
    if (this.saving) {
      this.saveAgain = true;
      return;
    }
    if (this.saveScheduled) return;
    this.saveScheduled = true;
    setImmediate(() => {
      this.saveScheduled = false;
      void this.save();
    });
  }

  private async save(): Promise<void> {
    if (this.stopped) return;
    this.saving = true;
    const held = [...this.pending.values()].filter((p) => p.sentAt === -1);
    try {
      await this.hooks.save();
    } finally {
      this.saving = false;
    }
    if (this.stopped) return;
    for (const p of held) if (p.sentAt === -1) p.sentAt = 0;
    this.flush(false);
    if (this.saveAgain) {
      this.saveAgain = false;
      this.scheduleSave();
    }
  }

  /** Sends statuses not sent on this connection, or sent longer than the resend interval ago. */
  private flush(all: boolean): void {
    const send = this.hooks.sender();
    if (send === null) return;
    const now = this.opts.now();
    const resend_ms = this.opts.statusResend_ms ?? STATUS_RESEND_MS_DEFAULT;
    let sent = 0;
    for (const p of this.pending.values()) {
      if (sent >= STATUS_SEND_BATCH_MAX) break;
      if (p.sentAt === -1) continue; // not saved yet: the scheduled save sends it
      if (!all && p.sentAt !== 0 && now - p.sentAt < resend_ms) continue;
      if (!send(p.frame)) return;
      p.sentAt = now;
      sent++;
    }
  }

  /** Resolves once every status is acked, or after `timeout_ms`. */
  waitForAcks(timeout_ms: number): Promise<void> {
    if (this.pending.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(resolve, timeout_ms);
      this.ackWaiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }
}

/** The status frame of one job event on `host` (reasons cut to REASON_BYTES_MAX). */
export function statusFrameOf(host: string, e: JobEvent): StatusFrame {
  const frame: StatusFrame = {
    type: 'status',
    host,
    jobId: e.jobId,
    run: e.run,
    // A run may be suspended and resumed many times: each such event has an id of its own.
    statusId:
      e.kind === 'suspended' || e.kind === 'resumed'
        ? `${statusIdOf(host, e.jobId, e.run, e.kind)}@${e.time_ms}`
        : statusIdOf(host, e.jobId, e.run, e.kind),
    kind: e.kind,
    time_ms: e.time_ms,
  };
  if (e.kind === 'started') frame.pid = e.pid;
  else if (e.kind === 'finished' || e.kind === 'launch-error') {
    if (e.kind === 'finished') {
      frame.exitCode = e.exitCode;
      frame.signal = e.signal;
    }
    if (e.reason !== undefined) frame.reason = cutReason(e.reason);
    if (e.postExecError !== undefined) frame.postExecError = cutReason(e.postExecError);
  }
  return frame;
}

/** A reason within REASON_BYTES_MAX. */
export function cutReason(text: string): string {
  return Buffer.byteLength(text) <= REASON_BYTES_MAX ? text : `${text.slice(0, REASON_BYTES_MAX / 4)}…`;
}
