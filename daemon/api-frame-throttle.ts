// One client API connection's frame rate (xce.yaml api_limits.frames_per_connection): every frame
// read is counted in the connection's bucket (api-rate-limits.ts FrameBucket); over the rate, the
// socket is not read until the excess is paid back (api-connection.ts pauses it while `throttled`).

import { LIMIT_KEYS, type AdmissionClock, type AdmissionLimits } from './api-admission-limits.js';
import { FrameBucket } from './api-rate-limits.js';

/** What the throttle needs of the admission (api-admission.ts, through the connection's `ConnectionHost`). */
export interface FrameThrottleHost {
  readonly limits: Pick<AdmissionLimits, 'frameRate'>;
  readonly clock: AdmissionClock;
  /** Logs a connection refused or closed (throttled per address). */
  note(address: string, msg: string, fields: Record<string, unknown>): void;
  /** A frame was received over the connection's frame rate (its socket is then not read for a while). */
  frameThrottled(started: boolean): void;
}

export class FrameThrottle {
  private readonly bucket: FrameBucket;
  /** Frames over the rate: the socket is not read until this timer fires. */
  private timer: { cancel(): void } | null = null;
  private until_ms = 0;

  constructor(
    private readonly host: FrameThrottleHost,
    private readonly address: string,
    /** Called once the excess is paid back: the socket may be read again. */
    private readonly paid: () => void,
  ) {
    this.bucket = new FrameBucket(host.limits.frameRate, host.clock.now());
  }

  /** The socket is not read for the frame rate. */
  get throttled(): boolean {
    return this.timer !== null;
  }

  /** Counts a frame; over the rate, the socket is not read until the excess is paid back. */
  count(): void {
    const now = this.host.clock.now();
    const wait = this.bucket.take(now);
    if (wait === 0) return;
    const started = this.timer === null;
    this.host.frameThrottled(started);
    this.until_ms = now + wait; // each frame over the rate owes more: the last one says until when
    if (!started) return;
    const rate = this.host.limits.frameRate;
    this.host.note(this.address, 'throttled a client API connection', {
      reason: `more than ${Math.round(1_000 / rate.refill_ms)} frames a second (${LIMIT_KEYS.framesPerConnection})`,
    });
    this.untilPaid(wait);
  }

  /** The connection closed: no more waiting. */
  cancel(): void {
    this.timer?.cancel();
    this.timer = null;
  }

  private untilPaid(wait_ms: number): void {
    this.timer = this.host.clock.after(wait_ms, () => {
      const left = this.until_ms - this.host.clock.now();
      if (left > 0) return this.untilPaid(left);
      this.timer = null;
      this.paid();
    });
  }
}
