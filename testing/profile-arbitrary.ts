// fast-check generator of whole profiles (every attribute, the service section included), for the
// hash tests. Test-only (imported by *.test.ts).

import fc from 'fast-check';
import type { Probe, ServiceSpec } from '../model/config-types.js';
import type { EnvVar, Limits, Profile, ResReq } from '../model/profile-types.js';
import { arbName, arbSimpleResReq } from './resreq-arbitrary.js';

const PLAIN = { noNullPrototype: true } as const;
const text = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'grapheme', maxLength: 6 }));

export const arbEnvVars: fc.Arbitrary<EnvVar[]> = fc
  .uniqueArray(fc.tuple(fc.stringMatching(/^[A-Z][A-Z0-9_]{0,6}$/), text), { selector: (t) => t[0], maxLength: 4 })
  .map((kv) =>
    kv.map(([name, value]) => ({ name, value })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  );

export const arbLimits: fc.Arbitrary<Limits> = fc
  .record(
    {
      runtime_s: fc.integer({ min: 1, max: 2 ** 40 }),
      memory_bytes: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
      cpu_s: fc.integer({ min: 1, max: 2 ** 40 }),
      tasks: fc.integer({ min: 1, max: 2 ** 32 }),
    },
    { requiredKeys: [], ...PLAIN },
  )
  .map((l) => ({ ...l }));

const arbProbe: fc.Arbitrary<Probe> = fc.record(
  {
    action: fc.oneof(
      fc.record({ kind: fc.constant('command' as const), command: fc.string({ minLength: 1, maxLength: 10 }) }, PLAIN),
      fc.record({ kind: fc.constant('tcp' as const), port: arbName }, PLAIN),
      fc.record(
        { kind: fc.constant('http' as const), port: arbName, path: fc.constantFrom('/', '/healthz', '/api') },
        PLAIN,
      ),
    ),
    period_s: fc.integer({ min: 1, max: 3600 }),
    timeout_s: fc.integer({ min: 1, max: 60 }),
    initialDelay_s: fc.integer({ min: 0, max: 600 }),
    failureThreshold: fc.integer({ min: 1, max: 10 }),
  },
  PLAIN,
);

export const arbService: fc.Arbitrary<ServiceSpec> = fc.record(
  {
    restart: fc.record(
      {
        policy: fc.constantFrom('always', 'on-failure', 'never' as const),
        backoffInitial_s: fc.integer({ min: 0, max: 600 }),
        backoffMax_s: fc.integer({ min: 0, max: 3600 }),
        giveUp: fc.option(
          fc.record(
            { attempts: fc.integer({ min: 1, max: 100 }), window_s: fc.integer({ min: 1, max: 86400 }) },
            PLAIN,
          ),
          { nil: null },
        ),
      },
      PLAIN,
    ),
    liveness: fc.option(arbProbe, { nil: null }),
    readiness: fc.option(arbProbe, { nil: null }),
    ports: fc
      .uniqueArray(
        fc.record(
          { name: arbName, port: fc.integer({ min: 0, max: 65535 }), protocol: fc.constantFrom('tcp', 'udp' as const) },
          PLAIN,
        ),
        { selector: (p) => p.name, maxLength: 3 },
      )
      .map((ps) => ps.sort((a, b) => (a.name < b.name ? -1 : 1))),
    replicas: fc.option(
      fc.record({ min: fc.integer({ min: 0, max: 10 }), max: fc.integer({ min: 1, max: 100 }) }, PLAIN),
      { nil: null },
    ),
    spread: fc.option(fc.record({ across: arbName, maxSkew: fc.integer({ min: 1, max: 5 }) }, PLAIN), { nil: null }),
    rollout: fc.option(
      fc.record({ maxUnavailable: fc.integer({ min: 0, max: 5 }), maxSurge: fc.integer({ min: 1, max: 5 }) }, PLAIN),
      { nil: null },
    ),
  },
  PLAIN,
);

export const arbResReqOrNull: fc.Arbitrary<ResReq | null> = fc.option(arbSimpleResReq, { nil: null });

export const arbFullProfile: fc.Arbitrary<Profile> = fc.record(
  {
    name: arbName,
    description: fc.option(text, { nil: null }),
    aliases: fc.uniqueArray(arbName, { maxLength: 3 }),
    mode: fc.constant('direct' as const),
    launchType: fc.constantFrom(null, 'serial', 'openmpi', 'mpich' as const),
    resreq: arbResReqOrNull,
    tasks: fc.option(
      fc
        .tuple(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 0, max: 512 }))
        .map(([min, extra]) => ({ min, max: min + extra })),
      { nil: null },
    ),
    limits: arbLimits,
    env: arbEnvVars,
    preExec: fc.option(text, { nil: null }),
    postExec: fc.option(text, { nil: null }),
    jobPrePostExec: fc.constantFrom('allow', 'forbid' as const),
    service: fc.option(arbService, { nil: null }),
  },
  PLAIN,
);
