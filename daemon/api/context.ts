// What the client API's operations (daemon/api/*.ts) are given by ApiServer: the controller node,
// the configuration in force, the token authority, the logger, the metrics and the clock. One
// object, built once by the server; the operations read it and change none of its fields.

import type { TokenAuthority } from '../auth.js';
import type { ControllerNode } from '../controller-node.js';
import type { Logger } from '../log.js';
import type { ControllerMetrics } from '../metrics.js';
import type { ClusterConfig } from '../../model/config-types.js';
import type { PeekDataFrame } from '../worker-protocol.js';

export interface ApiContext {
  readonly node: ControllerNode;
  /** The configuration in force; null until the first ConfigFact is applied. */
  config(): ClusterConfig | null;
  /** The bootstrap configuration: serves `login` (and token checks) before the first ConfigFact is applied. */
  readonly bootstrapConfig: ClusterConfig;
  readonly tokens: TokenAuthority;
  readonly log: Logger;
  readonly metrics: ControllerMetrics | null;
  readonly now: () => number;
  /** The leader's scheduler reason for a pending job (ApiServer.schedulerReason, set by the controller). */
  schedulerReason(jobId: number): string | undefined;
  /** Hosts whose worker is connected to this leader and heartbeating (ApiServer.availableHosts, set by the controller). */
  availableHosts(): ReadonlySet<string>;
  /** A piece of a running job's stdout from the worker of `host` (the leader's worker hub; worker-endpoint.ts peek). */
  peekWorker(
    host: string,
    q: { jobId: number; run: number; offset?: number; maxBytes: number },
  ): Promise<PeekDataFrame>;
}
