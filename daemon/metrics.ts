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
}

export const ROLE_CODES = { follower: 0, precandidate: 1, candidate: 2, leader: 3, learner: 4 } as const;

export class ControllerMetrics {
  readonly registry = new Registry();
  readonly proposals: Counter;
  readonly proposalsRejected: Counter;
  readonly walFsync: Histogram;
  readonly applyBatch: Histogram;
  readonly apiRequests: Counter;

  constructor(node: string, source: NodeGaugeSource, withDefaults = true) {
    const r = this.registry;
    r.setDefaultLabels({ node });
    if (withDefaults) collectDefaultMetrics({ register: r, prefix: 'xce_process_' });
    const gauge = (name: string, help: string, read: () => number): void => {
      new Gauge({
        name,
        help,
        registers: [r],
        collect() {
          this.set(read());
        },
      });
    };
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

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
