// The controller's Prometheus metrics, served at GET /metrics on its one port.
// Gauges are set from the node's state when scraped (collect callbacks), counters and histograms
// are updated on the hot path.

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface NodeGaugeSource {
  term(): number;
  /** 0 follower, 1 pre-candidate, 2 candidate, 3 leader, 4 learner. */
  roleCode(): number;
  commitIndex(): number;
  appliedIndex(): number;
  jobsByState(): Readonly<Record<string, number>>;
  /** Peer frames refused since start (frame-guard.ts), by reason. */
  framesRefused(): ReadonlyMap<string, number>;
  /** Configured hosts whose worker registered other resources than hosts.yaml allows (statemachine/host-capacity.ts). */
  hostsMismatched(): number;
  /** Retention and accounting figures (optional: a node without them exports none). */
  retention?(): Promise<RetentionFigures>;
}

export interface RetentionFigures {
  /** Finished jobs removed from the replicated state by CleanFacts (the state's count). */
  readonly jobsCleaned: number;
  /** Age of the finished job that ended first among those still in the state; null when none. */
  readonly oldestFinishedAge_s: number | null;
  /** The accounting store, null when it cannot be used. */
  readonly store: { readonly records: number; readonly bytes: number; readonly oldestAge_s: number | null } | null;
}

export const ROLE_CODES = { follower: 0, precandidate: 1, candidate: 2, leader: 3, learner: 4 } as const;

export class ControllerMetrics {
  readonly registry = new Registry();
  readonly proposals: Counter;
  readonly proposalsRejected: Counter;
  readonly walFsync: Histogram;
  readonly applyBatch: Histogram;
  readonly apiRequests: Counter;
  readonly schedulerPass = new Histogram({
    name: 'xce_scheduler_pass_seconds',
    help: 'Duration of one scheduling pass on the leader (merge and placement of the pending jobs).',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  constructor(node: string, source: NodeGaugeSource, withDefaults = true) {
    const r = this.registry;
    r.setDefaultLabels({ node });
    if (withDefaults) collectDefaultMetrics({ register: r, prefix: 'xce_process_' });
    this.nodeGauges(source);
    if (source.retention !== undefined) this.retentionGauges(source.retention.bind(source));
    this.proposals = new Counter({
      name: 'xce_raft_proposals_total',
      help: 'Entries proposed on this node while leader.',
      registers: [r],
    });
    this.proposalsRejected = new Counter({
      name: 'xce_api_rejections_total',
      help: 'Requests rejected by validation, RBAC or apply.',
      registers: [r],
    });
    this.apiRequests = new Counter({
      name: 'xce_api_requests_total',
      help: 'API requests by operation.',
      labelNames: ['op'],
      registers: [r],
    });
    this.walFsync = new Histogram({
      name: 'xce_wal_fsync_seconds',
      help: 'Duration of one WAL group-commit fdatasync.',
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1],
      registers: [r],
    });
    this.applyBatch = new Histogram({
      name: 'xce_apply_batch_entries',
      help: 'Committed entries applied per ready batch.',
      buckets: [1, 4, 16, 64, 256, 1024, 4096],
      registers: [r],
    });
  }

  private gauge(name: string, help: string, read: () => number): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }

  /** Raft and job gauges, read from the node when scraped. */
  private nodeGauges(source: NodeGaugeSource): void {
    const r = this.registry;
    const gauge = this.gauge.bind(this);
    gauge('xce_raft_term', 'Current Raft term.', () => source.term());
    gauge('xce_raft_role', 'Raft role: 0 follower, 1 pre-candidate, 2 candidate, 3 leader, 4 learner.', () =>
      source.roleCode(),
    );
    gauge('xce_raft_commit_index', 'Highest log index known committed.', () => source.commitIndex());
    gauge('xce_raft_applied_index', 'Highest log index applied to the state machine.', () => source.appliedIndex());
    gauge(
      'xce_raft_apply_lag_entries',
      'Committed entries not yet applied.',
      () => source.commitIndex() - source.appliedIndex(),
    );
    gauge(
      'xce_hosts_mismatched',
      'Hosts whose worker registered other resources than hosts.yaml allows (see `xcecli hosts`).',
      () => source.hostsMismatched(),
    );
    new Gauge({
      name: 'xce_jobs',
      help: 'Jobs by state.',
      labelNames: ['state'],
      registers: [r],
      collect() {
        this.reset();
        for (const [state, n] of Object.entries(source.jobsByState())) this.set({ state }, n);
      },
    });
    new Counter({
      name: 'xce_raft_frames_refused_total',
      help: 'Peer frames refused before they reached Raft (the link they came on is closed), by reason.',
      labelNames: ['reason'],
      registers: [r],
      collect() {
        this.reset();
        for (const [reason, n] of source.framesRefused()) this.inc({ reason }, n);
      },
    });
  }

  /** Finished jobs leaving the state, and the accounting store they go to (read once per scrape). */
  private retentionGauges(read: () => Promise<RetentionFigures>): void {
    const r = this.registry;
    let last: Promise<RetentionFigures> | null = null;
    // One read serves every gauge of a scrape (prom-client collects them one after another).
    const figures = (): Promise<RetentionFigures> => {
      if (last === null) {
        last = read();
        const done = (): void => void setImmediate(() => (last = null));
        last.then(done, done);
      }
      return last;
    };
    const gauge = (name: string, help: string, pick: (f: RetentionFigures) => number | null | undefined): void => {
      new Gauge({
        name,
        help,
        registers: [r],
        async collect() {
          const v = pick(await figures());
          if (v === null || v === undefined) this.reset();
          else this.set(v);
        },
      });
    };
    gauge(
      'xce_jobs_cleaned_total',
      'Finished jobs moved from the replicated state to accounting.',
      (f) => f.jobsCleaned,
    );
    gauge(
      'xce_oldest_finished_job_age_seconds',
      'Age of the oldest finished job still in the state (0 when none).',
      (f) => f.oldestFinishedAge_s,
    );
    gauge(
      'xce_accounting_store_usable',
      '1 when the accounting store is open and usable, 0 when it cannot be used (corrupt: see the log for its path).',
      (f) => (f.store === null ? 0 : 1),
    );
    gauge('xce_accounting_records', "Job records in this controller's accounting store.", (f) => f.store?.records);
    gauge('xce_accounting_store_bytes', 'Size of the accounting store on disk.', (f) => f.store?.bytes);
    gauge(
      'xce_accounting_oldest_record_age_seconds',
      'Age of the oldest record in the accounting store (0 when empty or not usable).',
      (f) => f.store?.oldestAge_s,
    );
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}

/**
 * The leader's bound on worker registrations (registration-gate.ts), and the frames its worker
 * endpoint received and sent by type (worker-frame-counts.ts), read when scraped.
 */
export function registerWorkerMetrics(
  registry: Registry,
  hub: {
    registrationStats(): { readonly queued: number; readonly deferred: number };
    readonly frames: { readonly received: ReadonlyMap<string, number>; readonly sent: ReadonlyMap<string, number> };
  },
): void {
  new Counter({
    name: 'xce_worker_registrations_deferred_total',
    help: 'Worker handshakes answered busy (retry after a time) because worker_registrations.queued_max were waiting.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(hub.registrationStats().deferred);
    },
  });
  new Gauge({
    name: 'xce_worker_registrations_queued',
    help: 'Worker handshakes and registrations waiting on this controller (handled worker_registrations.per_turn a turn).',
    registers: [registry],
    collect() {
      this.set(hub.registrationStats().queued);
    },
  });
  new Counter({
    name: 'xce_worker_frames_total',
    help: 'Frames this controller received from workers (direction="in") and sent to them ("out"), by frame type.',
    labelNames: ['direction', 'type'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [type, n] of hub.frames.received) this.inc({ direction: 'in', type }, n);
      for (const [type, n] of hub.frames.sent) this.inc({ direction: 'out', type }, n);
    },
  });
}

/** The TLS handshakes this controller's port completed, full and resumed (tls-resumption.ts), read when scraped. */
export function registerTlsMetrics(
  registry: Registry,
  handshakes: { readonly full: number; readonly resumed: number },
): void {
  new Counter({
    name: 'xce_tls_handshakes_total',
    help: 'TLS handshakes completed on this controller\'s port: session="full" (certificate sent and signed) or "resumed" (a session ticket of the cluster\'s, from this or another controller).',
    labelNames: ['session'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ session: 'full' }, handshakes.full);
      this.inc({ session: 'resumed' }, handshakes.resumed);
    },
  });
}
