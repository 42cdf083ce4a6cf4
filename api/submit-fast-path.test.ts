import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DEPENDENCY_CHARS_MAX } from '../model/dependency.js';
import { COMMAND_ARGS_MAX, ENV_VARS_MAX, JOB_TASKS_MAX, NAME_CHARS_MAX, TEXT_CHARS_MAX } from '../model/job-limits.js';
import { RequestError, parseRequest, requestOf } from './protocol.js';
import {
  JOB_LIMIT_CHARS_MAX,
  SESSION_CLIENT_CHARS_MAX,
  SESSION_CLIENT_CHARS_MIN,
  TOKEN_CHARS_MAX,
} from './request-limits.js';
import { fastSubmit } from './submit-fast-path.js';

/** What the zod schemas alone make of a frame: the request, or the refusal's code and wording. */
function bySchemas(raw: unknown): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: requestOf(raw) };
  } catch (err) {
    assert.ok(err instanceof RequestError, `not a RequestError: ${String(err)}`);
    return { ok: false, error: `${err.id} ${err.code} ${err.message}` };
  }
}

/** Strings at and around a limit, with and without a NUL byte. */
function stringAround(min: number, max: number): fc.Arbitrary<string> {
  const lengths = [0, 1, min - 1, min, min + 1, max - 1, max, max + 1].filter((n) => n >= 0);
  return fc.oneof(
    fc.constantFrom(...lengths).map((n) => 'a'.repeat(n)),
    fc.string({ maxLength: 12 }),
    fc.constantFrom('with\0nul', '\0', 'é€😀', ''),
  );
}

const numbers = fc.oneof(
  fc.integer({ min: -3, max: 3 }),
  fc.constantFrom(
    0.5,
    -0,
    1e300,
    Number.MAX_SAFE_INTEGER,
    Number.MAX_SAFE_INTEGER + 2,
    JOB_TASKS_MAX,
    JOB_TASKS_MAX + 1,
  ),
  fc.integer(),
);
/** Anything a JSON value of the wrong kind might be. */
const junk = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  numbers,
  fc.string({ maxLength: 4 }),
  fc.constant([]),
  fc.constant({}),
);

const envName = fc.oneof(
  fc.constantFrom(
    'PATH',
    'A_1',
    '_X',
    '1BAD',
    'BAD-NAME',
    '',
    'a'.repeat(256),
    'a'.repeat(257),
    '__proto__',
    'constructor',
    'toString',
  ),
  fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,6}$/),
);
const envRecord = fc.oneof(
  fc.dictionary(envName, fc.oneof(stringAround(0, TEXT_CHARS_MAX), junk), { maxKeys: 4 }),
  fc.constant(Object.fromEntries(Array.from({ length: ENV_VARS_MAX + 1 }, (_, i) => [`V${i}`, 'x']))),
  fc.constant(Object.fromEntries(Array.from({ length: ENV_VARS_MAX }, (_, i) => [`V${i}`, 'x']))),
  junk,
);
const limits = fc.oneof(
  fc.record(
    {
      runtime: stringAround(0, JOB_LIMIT_CHARS_MAX),
      memory: fc.oneof(stringAround(0, JOB_LIMIT_CHARS_MAX), junk),
      cpu: stringAround(0, JOB_LIMIT_CHARS_MAX),
      tasks: numbers,
      other: fc.string(),
    },
    { requiredKeys: [] },
  ),
  junk,
);
const command = fc.oneof(
  fc.array(fc.oneof(stringAround(0, TEXT_CHARS_MAX), fc.constant('true')), { minLength: 0, maxLength: 4 }),
  fc.constant(Array.from({ length: COMMAND_ARGS_MAX }, () => 'x')),
  fc.constant(Array.from({ length: COMMAND_ARGS_MAX + 1 }, () => 'x')),
  fc.constant(['true', 7]),
  junk,
);
const job = fc.record(
  {
    app: fc.oneof(stringAround(1, NAME_CHARS_MAX), junk),
    queue: stringAround(1, NAME_CHARS_MAX),
    name: stringAround(1, NAME_CHARS_MAX),
    tasks: numbers,
    resreq: stringAround(0, TEXT_CHARS_MAX),
    env: envRecord,
    limits,
    preExec: stringAround(0, TEXT_CHARS_MAX),
    postExec: fc.oneof(stringAround(0, TEXT_CHARS_MAX), junk),
    command,
    cwd: stringAround(0, TEXT_CHARS_MAX),
    stdout: stringAround(0, TEXT_CHARS_MAX),
    stderr: stringAround(0, TEXT_CHARS_MAX),
    dependency: stringAround(1, DEPENDENCY_CHARS_MAX),
    dependencyNever: fc.oneof(fc.constantFrom('pend', 'kill', 'Pend', ''), junk),
    script: fc.oneof(fc.constantFrom('#!/bin/sh\ntrue\n', 'a\0b', '', 'é'.repeat(600_000)), junk),
    extra: junk,
  },
  { requiredKeys: [] },
);
const session = fc.oneof(
  fc.record(
    {
      client: stringAround(SESSION_CLIENT_CHARS_MIN, SESSION_CLIENT_CHARS_MAX),
      seq: numbers,
      other: fc.string(),
    },
    { requiredKeys: [] },
  ),
  junk,
);
const frame = fc.record(
  {
    id: numbers,
    op: fc.constantFrom('jobs.submit', 'jobs.list', 'jobs.kill', 'nope', ''),
    token: fc.oneof(stringAround(0, TOKEN_CHARS_MAX), junk),
    session,
    stale: fc.oneof(fc.boolean(), junk),
    args: fc.oneof(fc.record({ job, dryRun: fc.oneof(fc.boolean(), junk), more: junk }, { requiredKeys: [] }), junk),
    extra: junk,
  },
  { requiredKeys: [] },
);

/** A frame most of whose values are right, so that the fast path is exercised, not just skipped. */
const nearlyValid = fc.record(
  {
    id: fc.nat(),
    op: fc.constant('jobs.submit'),
    token: fc.string({ maxLength: 40 }),
    session: fc.record({ client: fc.string({ minLength: 8, maxLength: 64 }), seq: fc.integer({ min: 1 }) }),
    args: fc.record(
      {
        job: fc.record(
          {
            command: fc.array(fc.string({ maxLength: 8 }), { minLength: 1, maxLength: 3 }),
            app: fc.string({ minLength: 1, maxLength: 8 }),
            queue: fc.string({ minLength: 1, maxLength: 8 }),
            tasks: fc.integer({ min: 1, max: 64 }),
            env: fc.dictionary(envName, fc.string({ maxLength: 6 }), { maxKeys: 3 }),
            limits: fc.record(
              { runtime: fc.string({ maxLength: 6 }), tasks: fc.integer({ min: 1, max: 9 }) },
              { requiredKeys: [] },
            ),
            resreq: fc.string({ maxLength: 10 }),
            dependencyNever: fc.constantFrom('pend', 'kill'),
          },
          { requiredKeys: ['command'] },
        ),
        dryRun: fc.boolean(),
      },
      { requiredKeys: ['job'] },
    ),
  },
  { requiredKeys: ['id', 'op', 'session', 'args'] },
);

/** A valid submit with exactly one value set to one of the values near its limits. */
function oneValueOff(): fc.Arbitrary<unknown> {
  const base = () => ({
    id: 7,
    op: 'jobs.submit',
    token: 'tok',
    session: { client: 'client-0001', seq: 1 } as Record<string, unknown>,
    args: { job: { command: ['true'] } as Record<string, unknown> } as Record<string, unknown>,
  });
  const at = <T>(arb: fc.Arbitrary<T>, set: (f: ReturnType<typeof base>, v: T) => void) =>
    arb.map((v) => {
      const f = base();
      set(f, v);
      return f;
    });
  const jobKey = (key: string, arb: fc.Arbitrary<unknown>) =>
    at(arb, (f, v) => {
      (f.args['job'] as Record<string, unknown>)[key] = v;
    });
  return fc.oneof(
    at(numbers, (f, v) => void (f.id = v)),
    at(fc.oneof(stringAround(0, TOKEN_CHARS_MAX), junk), (f, v) => void (f.token = v as string)),
    at(
      fc.oneof(stringAround(SESSION_CLIENT_CHARS_MIN, SESSION_CLIENT_CHARS_MAX), junk),
      (f, v) => void (f.session['client'] = v),
    ),
    at(numbers, (f, v) => void (f.session['seq'] = v)),
    at(session, (f, v) => void (f.session = v as Record<string, unknown>)),
    at(fc.oneof(fc.boolean(), junk), (f, v) => void ((f as Record<string, unknown>)['stale'] = v)),
    at(fc.oneof(fc.boolean(), junk), (f, v) => void (f.args['dryRun'] = v)),
    jobKey('app', fc.oneof(stringAround(1, NAME_CHARS_MAX), junk)),
    jobKey('queue', stringAround(1, NAME_CHARS_MAX)),
    jobKey('name', stringAround(1, NAME_CHARS_MAX)),
    jobKey('tasks', numbers),
    jobKey('resreq', fc.oneof(stringAround(0, TEXT_CHARS_MAX), junk)),
    jobKey('preExec', stringAround(0, TEXT_CHARS_MAX)),
    jobKey('postExec', stringAround(0, TEXT_CHARS_MAX)),
    jobKey('cwd', stringAround(0, TEXT_CHARS_MAX)),
    jobKey('stdout', stringAround(0, TEXT_CHARS_MAX)),
    jobKey('stderr', stringAround(0, TEXT_CHARS_MAX)),
    jobKey('env', envRecord),
    jobKey('limits', limits),
    jobKey('command', command),
    jobKey('dependency', stringAround(1, DEPENDENCY_CHARS_MAX)),
    jobKey('dependencyNever', fc.oneof(fc.constantFrom('pend', 'kill', 'Pend', ''), junk)),
    jobKey('script', fc.oneof(fc.constantFrom('#!/bin/sh\ntrue\n', 'a\0b', '', 'é'.repeat(600_000)), junk)),
    jobKey('extra', junk),
  );
}

/** The property: what the fast path accepts, the schemas accept, with the same value and key order. */
function agrees(value: unknown): boolean {
  // Through JSON, as the daemon sees a frame (fast-check's records can hold `-0` or holes JSON has not).
  const raw: unknown = JSON.parse(JSON.stringify(value));
  const fast = fastSubmit(raw);
  if (fast === undefined) return false;
  const slow = bySchemas(raw);
  assert.ok(
    slow.ok,
    `the fast path accepted what the schemas refuse: ${JSON.stringify(raw)} (${slow.ok ? '' : slow.error})`,
  );
  assert.equal(JSON.stringify(fast), JSON.stringify(slow.value), 'key order or values differ');
  assert.deepStrictEqual(fast, slow.value);
  return true;
}

test('what the submit fast path accepts, zod accepts with the same result (generated frames, near limits)', () => {
  let accepted = 0;
  fc.assert(
    fc.property(frame, (v) => {
      if (agrees(v)) accepted++;
    }),
    { numRuns: 3000, seed: 14 },
  );
  let acceptedNear = 0;
  fc.assert(
    fc.property(nearlyValid, (v) => {
      if (agrees(v)) acceptedNear++;
    }),
    { numRuns: 2000, seed: 15 },
  );
  let acceptedOff = 0;
  fc.assert(
    fc.property(oneValueOff(), (v) => {
      if (agrees(v)) acceptedOff++;
    }),
    { numRuns: 6000, seed: 16 },
  );
  // Not vacuous: most nearly valid frames take the fast path, and many with one value near a limit.
  assert.ok(acceptedNear > 1000, `only ${acceptedNear} of 2000 nearly valid frames took the fast path`);
  assert.ok(acceptedOff > 1000, `only ${acceptedOff} of 6000 frames with one value off took the fast path`);
  assert.ok(accepted >= 0);
});

test("a refused submit is refused with zod's words, whichever path it reached", () => {
  const base = {
    id: 9,
    op: 'jobs.submit',
    session: { client: 'client-0001', seq: 1 },
    args: { job: { command: ['true'] } },
  };
  const bad: unknown[] = [
    { ...base, session: undefined },
    { ...base, session: { client: 'short', seq: 1 } },
    { ...base, session: { client: 'client-0001', seq: 0 } },
    { ...base, id: -1 },
    { ...base, id: 1.5 },
    { ...base, token: 'x'.repeat(TOKEN_CHARS_MAX + 1) },
    { ...base, extra: 1 },
    { ...base, args: { job: { command: [] } } },
    { ...base, args: { job: { command: ['a\0b'] } } },
    { ...base, args: { job: { command: ['true'], tasks: JOB_TASKS_MAX + 1 } } },
    { ...base, args: { job: { command: ['true'], env: { '1BAD': 'x' } } } },
    { ...base, args: { job: { command: ['true'], env: { OK: 'a\0' } } } },
    { ...base, args: { job: { command: ['true'], limits: { runtime: 'x'.repeat(JOB_LIMIT_CHARS_MAX + 1) } } } },
    { ...base, args: { job: { command: ['true'], limits: { walltime: '1h' } } } },
    { ...base, args: { job: { command: ['true'], dependencyNever: 'maybe' } } },
    { ...base, args: { job: { command: ['true'], script: 'a\0b' } } },
    { ...base, args: { job: { command: ['true'], name: '' } } },
    { ...base, args: { job: { command: ['true'] }, dryRun: 'yes' } },
    { ...base, args: { job: { command: ['true'], nope: 1 } } },
  ];
  for (const b of bad) {
    const text = JSON.stringify(b);
    const raw: unknown = JSON.parse(text);
    assert.equal(fastSubmit(raw), undefined, `the fast path took ${text}`);
    const slow = bySchemas(raw);
    assert.ok(!slow.ok, `the schemas accepted ${text}`);
    assert.throws(
      () => parseRequest(text),
      (err: unknown) => err instanceof RequestError && `${err.id} ${err.code} ${err.message}` === slow.error,
    );
  }
});

test("the benchmark's submit and a full one take the fast path and read as the schemas read them", () => {
  const frames = [
    {
      id: 1,
      op: 'jobs.submit',
      token: 't',
      session: { client: 'abcdefgh', seq: 3 },
      args: { job: { command: ['true'] } },
    },
    {
      id: 2,
      op: 'jobs.submit',
      stale: false,
      session: { seq: 4, client: 'abcdefgh' },
      args: {
        dryRun: true,
        job: {
          script: '#!/bin/sh\necho hi\n',
          command: ['job.sh', 'x'],
          env: { ZED: '1', ALPHA: '2' },
          limits: { tasks: 4, runtime: '2h' },
          dependency: 'done(12)',
          dependencyNever: 'kill',
          stderr: 'e',
          stdout: 'o',
          cwd: '/tmp',
          postExec: 'b',
          preExec: 'a',
          resreq: 'select[mem>1]',
          tasks: 64,
          name: 'n',
          queue: 'normal',
          app: 'openfoam',
        },
      },
    },
  ];
  for (const f of frames) assert.ok(agrees(f), `not taken: ${JSON.stringify(f)}`);
});
