// The client API admission's Prometheus metrics (api-admission.ts), read from its figures when
// scraped: open connections, connections refused and closed by reason, requests rate-limited by
// limit, frames throttled. Registered on the controller's registry (metrics.ts, GET /metrics).

import { Counter, Gauge, type Registry } from 'prom-client';
import type { ApiAdmissionStats } from './api-admission.js';

/** Counters whose totals the admission keeps: set from them on each scrape. */
function totals(
  registry: Registry,
  name: string,
  help: string,
  label: string,
  read: () => Readonly<Record<string, number>>,
): void {
  new Counter({
    name,
    help,
    labelNames: [label],
    registers: [registry],
    collect() {
      this.reset();
      for (const [k, n] of Object.entries(read())) this.inc({ [label]: k }, n);
    },
  });
}

export function registerAdmissionMetrics(registry: Registry, stats: () => ApiAdmissionStats): void {
  // One read per scrape would need a cache; the figures are a pass over the connections, cheap next to a scrape.
  new Gauge({
    name: 'xce_api_connections',
    help: 'Open client connections: /api authenticated and unauthenticated, and REST (HTTP) connections.',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      const s = stats();
      this.set({ kind: 'authenticated' }, s.connections - s.unauthenticated);
      this.set({ kind: 'unauthenticated' }, s.unauthenticated);
      this.set({ kind: 'rest' }, s.restConnections);
    },
  });
  totals(
    registry,
    'xce_api_connections_refused_total',
    'Client connections refused (api_limits.connections_per_address, api_limits.sessions_per_user), by reason.',
    'reason',
    () => stats().refusedBy,
  );
  totals(
    registry,
    'xce_api_connections_closed_total',
    'Client API connections closed by the controller (auth deadline, unauthenticated requests, unread answers, ...), by reason.',
    'reason',
    () => stats().closed,
  );
  totals(
    registry,
    'xce_api_rate_limited_total',
    'Requests answered rate-limited (api_limits.requests_per_user, api_limits.requests_per_address), by limit.',
    'limit',
    () => stats().rateLimitedBy,
  );
  new Counter({
    name: 'xce_api_frames_throttled_total',
    help: 'Frames received over api_limits.frames_per_connection (their socket was then not read for a while).',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(stats().framesThrottled);
    },
  });
}
