// The shape of each configuration file, as zod schemas. They check structure only (types, required
// keys, enums, no unknown keys: a typo must not pass silently); meaning (units, resource
// requirements, cross-file references, aliases) is checked by config.ts, which can point at the
// exact YAML node. The same schemas are exported as JSON Schema to configs/schema/<file>.schema.json
// so editors validate the YAML as it is typed (cli/admin/config-schema-export.ts writes them; a test
// fails when the checked-in copies are stale).
//
// Every object is strict. New optional sections (I/O claims, `container:`, ...) are added as new
// optional keys without reshaping the existing ones.

import { z } from 'zod';
import { ARRAY_SIZE_MAX_LIMIT, FINISHED_JOBS_MAX_LIMIT, PERMISSIONS } from './config-types.js';
import { ApiLimitsSchema, WorkerRegistrationsSchema } from './config-api-limits-schema.js';
import {
  Command,
  Duration,
  EnvValues,
  Name,
  NonNegativeInt,
  PositiveInt,
  Size,
  capnpInt,
} from './config-schema-values.js';

// ---- applications.yaml ----

const ProbeSchema = z
  .strictObject({
    command: Command.optional(),
    tcp: z.strictObject({ port: Name.meta({ description: 'A named port of this service.' }) }).optional(),
    http: z.strictObject({ port: Name, path: z.string().startsWith('/').optional() }).optional(),
    period: Duration.optional().meta({ description: 'How often to probe (default 10s).' }),
    timeout: Duration.optional().meta({ description: 'A probe slower than this fails (default 1s).' }),
    initial_delay: Duration.optional().meta({
      description: 'Wait this long after start before the first probe (default 0s).',
    }),
    failure_threshold: capnpInt('Probe.failureThreshold', 'UInt32', 1).optional().meta({
      description: 'Consecutive failures before the probe counts as failed (default 3).',
    }),
  })
  .meta({ description: 'A probe: exactly one of command, tcp, http.' });

export const ServiceSchema = z
  .strictObject({
    restart: z
      .strictObject({
        policy: z.enum(['always', 'on-failure', 'never']),
        backoff: Duration.optional().meta({
          description: 'First delay before a restart, doubled each time (default 1s).',
        }),
        backoff_max: Duration.optional().meta({ description: 'Ceiling of the restart delay (default 5m).' }),
        give_up: z
          .strictObject({ attempts: capnpInt('Restart.giveUpAttempts', 'UInt32', 1), within: Duration })
          .optional()
          .meta({ description: 'Stop restarting after this many restarts within this window.' }),
      })
      .optional(),
    liveness: ProbeSchema.optional(),
    readiness: ProbeSchema.optional(),
    ports: z
      .array(
        z.strictObject({
          name: Name,
          port: capnpInt('Port.port', 'UInt16', 0)
            .optional()
            .meta({ description: '0 or absent: the worker picks a free port.' }),
          protocol: z.enum(['tcp', 'udp']).optional(),
        }),
      )
      .optional(),
    replicas: z
      .strictObject({ min: capnpInt('Range.min', 'UInt32', 0), max: capnpInt('Range.max', 'UInt32', 1) })
      .optional(),
    spread: z
      .strictObject({
        across: Name.meta({ description: 'A host attribute (e.g. hname, rack) whose values replicas spread over.' }),
        max_skew: capnpInt('Spread.maxSkew', 'UInt32', 1).optional(),
      })
      .optional(),
    rollout: z
      .strictObject({
        max_unavailable: capnpInt('Rollout.maxUnavailable', 'UInt32', 0),
        max_surge: capnpInt('Rollout.maxSurge', 'UInt32', 0),
      })
      .optional(),
  })
  .meta({
    description: 'How a long-running service of this application is supervised (kind: service). Profile values bind.',
  });

export const ProfileSchema = z
  .strictObject({
    name: Name,
    description: z.string().optional(),
    aliases: z
      .array(Name)
      .optional()
      .meta({ description: 'Other names that resolve to this profile (e.g. its name before a rename).' }),
    mode: z
      .literal('direct', { error: 'only `direct` is supported in this version' })
      .optional()
      .meta({ description: 'Execution mode. Only `direct` (run as the submitting user) exists in this version.' }),
    kind: z
      .enum(['batch', 'service'])
      .optional()
      .meta({ description: 'batch (default) or service (needs a service: section).' }),
    launch_type: z.enum(['serial', 'openmpi', 'mpich']).optional(),
    resreq: z
      .string()
      .optional()
      .meta({ description: 'Essential resource requirement terms, e.g. "select[ib] rusage[license_foam=1]".' }),
    tasks: z
      .strictObject({ min: capnpInt('TaskRange.min', 'UInt32', 1), max: capnpInt('TaskRange.max', 'UInt32', 1) })
      .optional()
      .meta({ description: 'Task range; a job without -n gets min.' }),
    limits: z
      .strictObject({
        runtime: Duration.optional(),
        memory: Size.optional(),
        cpu: Duration.optional(),
        tasks: capnpInt('Limits.tasks', 'UInt32', 1, 'schema/facts.capnp, the dispatch record').optional(),
      })
      .optional()
      .meta({ description: 'Per-job maximums; a job may ask for less.' }),
    env: EnvValues.optional().meta({ description: 'Variables the application needs; XCE_* names are reserved.' }),
    pre_exec: Command.optional().meta({
      description: 'Outer-layer pre-exec, run in a clean environment before the job.',
    }),
    post_exec: Command.optional().meta({
      description: 'Outer-layer post-exec, run in a clean environment after the job.',
    }),
    job_pre_post_exec: z
      .enum(['allow', 'forbid'])
      .optional()
      .meta({ description: 'Whether a job may add its own pre/post-exec (default allow).' }),
    service: ServiceSchema.optional(),
  })
  .meta({ description: 'An application profile: what every job of the application must have.' });

export const ApplicationsFileSchema = z.strictObject({ applications: z.array(ProfileSchema) });

// ---- xce.yaml ----

export const XceFileSchema = z.strictObject({
  name: Name.meta({ description: 'The cluster name.' }),
  controllers: z
    .array(
      z.strictObject({
        id: PositiveInt,
        host: z.string().min(1),
        port: z.number().int().min(1).max(65535),
      }),
    )
    .min(1),
  secret: z
    .string()
    .min(32)
    .optional()
    .meta({ description: 'The cluster secret inline (development only; use secret_file).' }),
  secret_file: z
    .string()
    .min(1)
    .optional()
    .meta({ description: 'Path of a file holding the cluster secret (at least 32 bytes).' }),
  default_application: Name.optional().meta({
    description: 'The profile of jobs submitted without --app (a profile name, not an alias).',
  }),
  finished_job_retention: Duration.optional().meta({
    description:
      "How long a finished job stays in the controllers' state before it moves to accounting (default 1h; LSF CLEAN_PERIOD).",
  }),
  finished_jobs_max: PositiveInt.max(FINISHED_JOBS_MAX_LIMIT).optional().meta({
    description: 'Most finished jobs kept in the state, oldest cleaned first (default 200000, at most 500000).',
  }),
  accounting_retention: Duration.optional().meta({
    description: "How long the accounting store keeps a finished job's record (default 90d).",
  }),
  token_lifetime: Duration.optional().meta({
    description:
      "How long a user's access token lives (default 1h, at most 30d); xcecli refreshes it with its refresh token.",
  }),
  refresh_token_lifetime: Duration.optional().meta({
    description:
      'How long the refresh token of `xcecli login` lives (default 7d, at most 30d, not shorter than token_lifetime).',
  }),
  tls: z
    .strictObject({
      cert_file: z
        .string()
        .min(1)
        .meta({ description: "This controller's certificate (PEM), for wss:// and https://." }),
      key_file: z.string().min(1).meta({ description: 'Its private key (PEM), mode 0600.' }),
      ca_file: z.string().min(1).meta({
        description: 'The CA (PEM) that signed every controller certificate: peers verify each other with it.',
      }),
    })
    .optional()
    .meta({ description: "TLS on the controllers' port (paths relative to the configuration directory)." }),
  insecure_dev: z
    .boolean()
    .optional()
    .meta({ description: 'Plain ws:// and http:// without TLS: development only (a loud warning at start).' }),
  array_size_max: PositiveInt.max(ARRAY_SIZE_MAX_LIMIT).optional().meta({
    description: 'Most elements one job array (-J "name[1-1000]") may have (default 100000, at most 1000000).',
  }),
  api_limits: ApiLimitsSchema.optional(),
  worker_registrations: WorkerRegistrationsSchema.optional(),
});

// ---- queues.yaml ----

export const QueuesFileSchema = z.strictObject({
  queues: z.array(
    z.strictObject({
      name: Name,
      priority: z.number().int().min(0).max(1000),
      description: z.string().optional(),
      res_req: z
        .string()
        .optional()
        .meta({ description: 'DEPRECATED: move resource requirements into an application profile.' }),
      pre_exec: Command.optional().meta({ description: 'DEPRECATED: move pre-exec into an application profile.' }),
      post_exec: Command.optional().meta({ description: 'DEPRECATED: move post-exec into an application profile.' }),
    }),
  ),
});

// ---- hosts.yaml ----

export const HostsFileSchema = z.strictObject({
  hosts: z.array(
    z.strictObject({
      name: z.string().min(1),
      slots: PositiveInt,
      mem: Size,
      resources: z
        .array(Name)
        .optional()
        .meta({ description: 'Boolean resources this host has (resources.yaml, type boolean).' }),
      numeric: z
        .record(z.string(), z.number())
        .optional()
        .meta({ description: 'Numeric host resources, e.g. gpu: 4.' }),
      strings: z
        .record(z.string(), z.string())
        .optional()
        .meta({ description: 'String host resources, e.g. rack: r12.' }),
    }),
  ),
});

// ---- resources.yaml ----

export const ResourcesFileSchema = z.strictObject({
  resources: z.array(
    z.strictObject({
      name: Name,
      type: z.enum(['boolean', 'numeric', 'string']),
      scope: z
        .enum(['host', 'cluster'])
        .optional()
        .meta({ description: 'host (default): per host; cluster: one shared pool such as licenses.' }),
      total: NonNegativeInt.optional().meta({ description: 'Size of a cluster-scope pool.' }),
      description: z.string().optional(),
    }),
  ),
});

// ---- rbac.yaml ----

export const RbacFileSchema = z.strictObject({
  roles: z.array(
    z.strictObject({
      name: Name,
      description: z.string().optional(),
      permissions: z.array(
        z.strictObject({
          name: z.enum(PERMISSIONS),
          type: z.enum(['queue', 'app', 'all']).optional().meta({
            description: 'Scope type: queue (queue:submit), app (app:use, app:view); absent or all otherwise.',
          }),
          values: z.array(z.string().min(1)).optional().meta({ description: 'Queue or profile names, or all.' }),
        }),
      ),
    }),
  ),
  bindings: z.array(
    z.strictObject({
      role: Name,
      users: z.array(z.string().min(1)).optional(),
      groups: z.array(z.string().min(1)).optional(),
    }),
  ),
});

// ---- users.yaml ----

export const SCRYPT_HASH_PATTERN = /^scrypt\$\d+\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/;

export const UsersFileSchema = z.strictObject({
  users: z.array(
    z.strictObject({
      name: z.string().min(1),
      groups: z.array(z.string().min(1)).optional(),
      password: z
        .string()
        .regex(SCRYPT_HASH_PATTERN, { error: 'expected a scrypt hash scrypt$N$salt$key (make one with xceadmin)' })
        .meta({ description: 'scrypt$N$salt-b64$key-b64' }),
    }),
  ),
});

/** Each configuration file's schema, by base name. */
export const FILE_SCHEMAS = {
  'xce.yaml': XceFileSchema,
  'applications.yaml': ApplicationsFileSchema,
  'queues.yaml': QueuesFileSchema,
  'hosts.yaml': HostsFileSchema,
  'resources.yaml': ResourcesFileSchema,
  'rbac.yaml': RbacFileSchema,
  'users.yaml': UsersFileSchema,
} as const;

export type ConfigFileName = keyof typeof FILE_SCHEMAS;
export const CONFIG_FILE_NAMES = Object.keys(FILE_SCHEMAS) as ConfigFileName[];

/** The JSON Schema of one file, as written to configs/schema/<file>.schema.json. */
export function configFileJsonSchema(file: ConfigFileName): Record<string, unknown> {
  const base = file.replace(/\.yaml$/, '');
  return {
    ...(z.toJSONSchema(FILE_SCHEMAS[file], { io: 'input' }) as Record<string, unknown>),
    $id: `https://xce.example/schema/${base}.schema.json`,
    title: `XCE ${file}`,
  };
}
