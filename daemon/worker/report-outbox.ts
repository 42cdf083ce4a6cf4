// The worker's acks and statuses of one turn of its event loop, sent as one `reports` frame once
// the turn is over (the `reports-batch` feature, ../worker-report-frames.ts): a burst of starts
// answered, or of statuses made durable by one state-file save, costs the controller one frame
// (one parse, one wakeup), not one per job. leader-link.ts keeps one per registered connection
// whose controller named the feature; a connection that closes drops what is queued (a status not
// acked is sent again on the next registration, as one lost in a single frame would be).

import {
  type AckFrame,
  type StatusFrame,
  WORKER_FRAME_BYTES_MAX,
  type WorkerToControllerFrame,
} from '../worker-protocol.js';
import { encodeReportFrames } from '../worker-report-frames.js';

export class ReportOutbox {
  private acks: AckFrame[] = [];
  private statuses: StatusFrame[] = [];
  private scheduled = false;
  /** Frames written so far (tests, benchmarks). */
  frames = 0;

  constructor(
    private readonly host: string,
    /** Writes one encoded frame; false when the connection is not open (the rest is dropped). */
    private readonly write: (text: string) => boolean,
  ) {}

  /** Takes an ack or a status, to be sent at the end of this turn; false for any other frame (send it as it is). */
  push(frame: WorkerToControllerFrame): boolean {
    if (frame.type === 'ack') this.acks.push(frame);
    else if (frame.type === 'status') this.statuses.push(frame);
    else return false;
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return true;
  }

  /** Sends what is queued: as few `reports` frames as the limits allow, a lone report as its single frame. */
  flush(): void {
    this.scheduled = false;
    const { acks, statuses } = this;
    this.acks = [];
    this.statuses = [];
    if (acks.length + statuses.length === 0) return;
    for (const text of encodeReportFrames(this.host, acks, statuses, WORKER_FRAME_BYTES_MAX)) {
      if (!this.write(text)) return;
      this.frames++;
    }
  }
}
