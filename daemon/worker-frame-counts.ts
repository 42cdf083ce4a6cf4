// The frames the leader's worker endpoint received from workers and sent to them, by type, since
// it started (GET /metrics: `xce_worker_frames_total{direction, type}`): what the `reports-batch`
// feature saves (worker-report-frames.ts) shows there as fewer frames per job.

export class WorkerFrameCounts {
  /** Frames received, by type (`status`, `reports`, ...). */
  readonly received = new Map<string, number>();
  /** Frames sent, by type (`start` counts one- and several-job starts alike). */
  readonly sent = new Map<string, number>();

  in(type: string): void {
    this.received.set(type, (this.received.get(type) ?? 0) + 1);
  }

  out(type: string): void {
    this.sent.set(type, (this.sent.get(type) ?? 0) + 1);
  }
}
