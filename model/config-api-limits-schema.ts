// The shape of xce.yaml's `api_limits`, the limits against abuse of the client API and the REST API
// (config-schema.ts puts it into xce.yaml's schema; api-admission-limits.ts in daemon/ applies it), and
// of `worker_registrations`, the leader's bound on worker registrations (daemon/registration-gate.ts).

import { z } from 'zod';
import {
  API_AUTH_DEADLINE_MS_LIMIT,
  API_LIMITS_DEFAULT,
  CONNECTIONS_LIMIT_MAX,
  RATE_LIMIT_MAX,
  WORKER_REGISTRATIONS_DEFAULT,
  WORKER_REGISTRATIONS_LIMIT_MAX,
} from './config-types.js';
import { Duration, PositiveInt } from './config-schema-values.js';

/** A token bucket in xce.yaml: `rate` a second on average, `burst` at once (at least `rate`). */
const RateSchema = (what: string, rate: number, burst: number) =>
  z
    .strictObject({
      rate: PositiveInt.max(RATE_LIMIT_MAX).meta({ description: `${what} a second on average (default ${rate}).` }),
      burst: PositiveInt.max(RATE_LIMIT_MAX).meta({ description: `${what} at once (default ${burst}).` }),
    })
    .meta({ description: `${what}: a token bucket.` });

export const ApiLimitsSchema = z
  .strictObject({
    connections_per_address: PositiveInt.max(CONNECTIONS_LIMIT_MAX)
      .optional()
      .meta({
        description: `Connections one client address may hold open to /api and the REST API together (default ${API_LIMITS_DEFAULT.connectionsPerAddress}).`,
      }),
    sessions_per_user: PositiveInt.max(CONNECTIONS_LIMIT_MAX)
      .optional()
      .meta({
        description: `Authenticated /api connections one user may hold open on one controller (default ${API_LIMITS_DEFAULT.sessionsPerUser}).`,
      }),
    requests_per_user: RateSchema(
      'Requests of one user',
      API_LIMITS_DEFAULT.requestsPerUser.rate,
      API_LIMITS_DEFAULT.requestsPerUser.burst,
    ).optional(),
    requests_per_address: RateSchema(
      'Requests from one client address',
      API_LIMITS_DEFAULT.requestsPerAddress.rate,
      API_LIMITS_DEFAULT.requestsPerAddress.burst,
    ).optional(),
    frames_per_connection: RateSchema(
      'Frames on one /api connection',
      API_LIMITS_DEFAULT.framesPerConnection.rate,
      API_LIMITS_DEFAULT.framesPerConnection.burst,
    ).optional(),
    auth_deadline: Duration.optional().meta({
      description: `An /api connection not logged in by then is closed (default ${API_LIMITS_DEFAULT.authDeadlineMs / 1000}s, at most ${API_AUTH_DEADLINE_MS_LIMIT / 1000}s).`,
    }),
  })
  .meta({ description: 'Limits against abuse of the client API and the REST API (every key optional).' });

export const WorkerRegistrationsSchema = z
  .strictObject({
    per_turn: PositiveInt.max(WORKER_REGISTRATIONS_LIMIT_MAX)
      .optional()
      .meta({
        description: `Worker handshakes and registrations the leader handles per turn of its event loop (default ${WORKER_REGISTRATIONS_DEFAULT.perTurn}).`,
      }),
    queued_max: PositiveInt.max(WORKER_REGISTRATIONS_LIMIT_MAX)
      .optional()
      .meta({
        description: `Worker handshakes and registrations waiting on the leader in all; past it a worker is answered busy with a time to retry after (default ${WORKER_REGISTRATIONS_DEFAULT.queuedMax}).`,
      }),
  })
  .meta({
    description: "The leader's bound on worker registrations (a storm of them after a failover); every key optional.",
  });
