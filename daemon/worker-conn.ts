// What the controller side of `/worker` (worker-endpoint.ts) keeps per connection, takes as its
// options, and tells its registration listeners (the dispatcher) of a worker it accepted.

import type { WebSocket } from 'ws';
import type { ChallengeBook } from './handshake.js';
import type { ControllerToWorkerFrame } from './worker-protocol.js';

/** A worker the leader accepted, as its registration listeners hear of it. */
export interface Registration {
  readonly host: string;
  /** Every run the worker says it has, as `jobId.run`. */
  readonly running: ReadonlySet<string>;
  /** The runs among them the worker has suspended (SIGSTOP), as `jobId.run`. */
  readonly suspended: ReadonlySet<string>;
  /** Sends on the registering connection. */
  send(frame: ControllerToWorkerFrame): void;
}

export interface WorkerEndpointOptions {
  /** The controllers' worker root (deriveClusterKeys(...).workerRoot): each host's credential derives from it. */
  readonly workerRoot: Uint8Array;
  /** This controller's nonces (GET /challenge). */
  readonly challenges: ChallengeBook;
  /** After this long without hearing from a host, requeue its running jobs (0: never). */
  readonly hostLost_ms?: number;
}

/** One `/worker` connection, registered or not. */
export interface WorkerConn {
  readonly host: string;
  /** The enrolment epoch its credential was of. */
  readonly epoch: number;
  readonly ws: WebSocket;
  /** The worker takes `start` frames carrying several jobs. */
  readonly startBatch: boolean;
  /** The worker takes `status-acks` frames, and is told at registration that it may send `reports` frames. */
  readonly reportsBatch: boolean;
  /** The worker takes `registered` with the count of hosts (its reconnect spread). */
  readonly failoverSpread: boolean;
  /** The worker sends its pings alone as heartbeats once `registered` names the feature (worker-start-batch.ts). */
  readonly pingHeartbeat: boolean;
  lastSeen_ms: number;
  registered: boolean;
  /** Its `register` waits in the gate's queue (one at a time per connection). */
  registerQueued: boolean;
}
