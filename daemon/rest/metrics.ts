// The REST API's Prometheus metrics, on the controller's registry (daemon/metrics.ts, GET /metrics):
// requests per route (the route's template, `/v1/jobs/{id}`, so a label never holds an id), method
// and status, and their latencies.

import { Counter, Histogram, type Registry } from 'prom-client';

export class RestMetrics {
  private readonly requests: Counter<'route' | 'method' | 'status'>;
  private readonly seconds: Histogram<'route' | 'method'>;

  constructor(registry: Registry) {
    this.requests = new Counter({
      name: 'xce_rest_requests_total',
      help: 'REST API requests by route template, method and HTTP status.',
      labelNames: ['route', 'method', 'status'],
      registers: [registry],
    });
    this.seconds = new Histogram({
      name: 'xce_rest_request_duration_seconds',
      help: 'REST API request latency by route template and method (a forwarded write includes the leader).',
      labelNames: ['route', 'method'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    });
  }

  observe(route: string, method: string, status: number, seconds: number): void {
    this.requests.inc({ route, method, status: String(status) });
    this.seconds.observe({ route, method }, seconds);
  }
}
