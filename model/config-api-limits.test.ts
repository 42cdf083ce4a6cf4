// xce.yaml `api_limits` and `worker_registrations`: the defaults when absent, the values given, and each bad value refused
// naming the field (schema errors and the checks of config-controllers.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadConfig } from './config.js';
import { API_LIMITS_DEFAULT, type Diagnostic, WORKER_REGISTRATIONS_DEFAULT } from './config-types.js';
import { readdirSync } from 'node:fs';

const CONFIGS = new URL('../../configs/', import.meta.url);
const shipped = readdirSync(CONFIGS)
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => ({ path: `cfg/${f}`, text: readFileSync(new URL(f, CONFIGS), 'utf8') }));

/** The shipped configuration with `tail` appended to xce.yaml. */
function load(tail: string) {
  return loadConfig(shipped.map((f) => (f.path === 'cfg/xce.yaml' ? { ...f, text: `${f.text}\n${tail}\n` } : f)));
}

function errorsOf(tail: string): readonly Diagnostic[] {
  const r = load(tail);
  assert.equal(r.ok, false, `${tail} should be refused`);
  return r.ok ? [] : r.errors;
}

test('without api_limits the defaults apply', () => {
  const r = load('');
  assert.ok(r.ok);
  assert.deepEqual(r.config.cluster.apiLimits, API_LIMITS_DEFAULT);
});

test('api_limits: the keys given replace their defaults, the others keep theirs', () => {
  const r = load(
    [
      'api_limits:',
      '  connections_per_address: 64',
      '  sessions_per_user: 8',
      '  requests_per_user: { rate: 100, burst: 200 }',
      '  frames_per_connection: { rate: 50, burst: 10 }',
      '  auth_deadline: 3s',
    ].join('\n'),
  );
  assert.ok(r.ok, r.ok ? '' : JSON.stringify(r.errors));
  assert.deepEqual(r.config.cluster.apiLimits, {
    connectionsPerAddress: 64,
    sessionsPerUser: 8,
    requestsPerUser: { rate: 100, burst: 200 },
    requestsPerAddress: API_LIMITS_DEFAULT.requestsPerAddress,
    framesPerConnection: { rate: 50, burst: 10 },
    authDeadlineMs: 3_000,
  });
});

test('bad api_limits values are refused, naming the field', () => {
  const cases: Array<[string, string, RegExp]> = [
    [
      'api_limits: { connections_per_address: 0 }',
      'api_limits.connections_per_address',
      />=\s*1|at least 1|too small/i,
    ],
    ['api_limits: { sessions_per_user: 2.5 }', 'api_limits.sessions_per_user', /integer|whole/i],
    ['api_limits: { requests_per_user: { rate: 10 } }', 'api_limits.requests_per_user.burst', /required|missing/i],
    ['api_limits: { frames_per_connection: { rate: -1, burst: 5 } }', 'api_limits.frames_per_connection.rate', /1/],
    ['api_limits: { auth_deadline: 0 }', 'api_limits.auth_deadline', /at least 1s/],
    ['api_limits: { auth_deadline: 1h }', 'api_limits.auth_deadline', /longer than 300s/],
    ['api_limits: { auth_deadline: soon }', 'api_limits.auth_deadline', /duration/],
    ['api_limits: { max_connections: 5 }', 'api_limits', /max_connections/],
  ];
  for (const [tail, field, match] of cases) {
    const es = errorsOf(tail);
    const found = es.find((d) => d.file === 'xce.yaml' && (d.field ?? '').startsWith(field) && match.test(d.message));
    assert.ok(found, `${tail}: no error on ${field} matching ${match} among ${JSON.stringify(es, null, 1)}`);
  }
});

test('worker_registrations: the defaults when absent, a key given replaces its default', () => {
  const none = load('');
  assert.ok(none.ok);
  assert.deepEqual(none.config.cluster.workerRegistrations, WORKER_REGISTRATIONS_DEFAULT);
  const some = load('worker_registrations: { queued_max: 16 }');
  assert.ok(some.ok, some.ok ? '' : JSON.stringify(some.errors));
  assert.deepEqual(some.config.cluster.workerRegistrations, {
    perTurn: WORKER_REGISTRATIONS_DEFAULT.perTurn,
    queuedMax: 16,
  });
});

test('bad worker_registrations values are refused, naming the field', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['worker_registrations: { per_turn: 0 }', 'worker_registrations.per_turn', />=\s*1|at least 1|too small/i],
    ['worker_registrations: { queued_max: 1.5 }', 'worker_registrations.queued_max', /integer|whole/i],
    ['worker_registrations: { queue: 5 }', 'worker_registrations', /queue/],
  ];
  for (const [tail, field, match] of cases) {
    const es = errorsOf(tail);
    const found = es.find((d) => d.file === 'xce.yaml' && (d.field ?? '').startsWith(field) && match.test(d.message));
    assert.ok(found, `${tail}: no error on ${field} matching ${match} among ${JSON.stringify(es, null, 1)}`);
  }
});
