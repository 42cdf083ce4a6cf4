// One admission for a submit, in the leader's early check and in apply: what one refuses the other
// refuses, with the same words, and nothing admitted can be refused by a worker for its shape.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { admitSubmit } from './admission.js';
import { apply } from './apply.js';
import { loadConfig } from '../model/config.js';
import { encodeFact } from './facts-codec.js';
import type { ApplyResult, JobSpec } from './facts.js';
import { submitFactFor } from './jobs.js';
import { jobSpec, testClusterFiles } from '../testing/test-cluster.js';
import { configuredState } from '../testing/state-facts.js';

const T0 = 1_764_547_200_000;

/** Applies a submit straight to the log, as a leader that skipped (or disagreed with) the early check would. */
function applied(spec: Partial<JobSpec>, app: string | null = null, user = 'alice'): ApplyResult {
  const state = configuredState(T0);
  const config = state.config!.cluster;
  return apply(
    state,
    encodeFact({
      clientId: 'c-admission',
      sequence: 1,
      timeMs: T0 + 1,
      body: submitFactFor(config, user, 'normal', app, jobSpec(spec)),
    }),
    2,
  );
}

function refused(r: ApplyResult, what = ''): { code: string; message: string } {
  assert.equal(r.kind, 'rejected', `${what}: ${JSON.stringify(r)}`);
  return r as { code: string; message: string };
}

test('apply refuses a resource requirement naming an unknown resource, as the early check does', () => {
  const r = refused(applied({ resreq: 'select[infiniband]' }));
  assert.equal(r.code, 'unknown_resource');
  assert.match(r.message, /^resource requirement: .*infiniband.*not defined in resources\.yaml/);
});

test('apply refuses env names, counts and lengths a worker would refuse in its start frame', () => {
  const bad: Array<[Partial<JobSpec>, RegExp]> = [
    [
      { env: [{ name: 'MY-VAR', value: '1' }] },
      /^environment variable name "MY-VAR" is not valid: use letters, digits and "_", not starting with a digit$/,
    ],
    [{ env: [{ name: 'A=B', value: '1' }] }, /"A=B" is not valid/],
    [
      { env: Array.from({ length: 1025 }, (_, i) => ({ name: `V${String(i).padStart(4, '0')}`, value: '' })) },
      /^a job may set at most 1024 environment variables, not 1025$/,
    ],
    [
      {
        env: [
          { name: 'B', value: '1' },
          { name: 'A', value: '2' },
        ],
      },
      /sorted by name/,
    ],
    [
      { env: [{ name: 'A', value: 'x'.repeat(64 * 1024 + 1) }] },
      /^environment variable A is longer than 65536 characters$/,
    ],
    [{ command: [] }, /^the job has no command$/],
    [{ command: Array.from({ length: 4097 }, () => 'x') }, /at most 4096 arguments/],
    [{ cwd: 'x'.repeat(64 * 1024 + 1) }, /working directory is longer than 65536 characters/],
  ];
  for (const [spec, re] of bad) {
    const r = refused(applied(spec), JSON.stringify(spec).slice(0, 80));
    assert.equal(r.code, 'invalid_job', r.message);
    assert.match(r.message, re);
  }
});

const loaded = loadConfig(testClusterFiles());
assert.ok(loaded.ok);
const config = loaded.config;

function admit(user: string, app: string | null, spec: Partial<JobSpec> = {}, queue = 'normal') {
  return admitSubmit(config, user, submitFactFor(config, user, queue, app, jobSpec(spec)));
}

test('admission records the alias target and the default, and checks app:use on the target', () => {
  const viaAlias = admit('alice', 'openfoam-old');
  assert.ok(viaAlias.ok);
  assert.deepEqual([viaAlias.submit.profile, viaAlias.submit.profileRequested], ['openfoam', 'openfoam-old']);
  const byDefault = admit('alice', null);
  assert.ok(byDefault.ok);
  assert.deepEqual([byDefault.submit.profile, byDefault.submit.profileRequested], ['serial', null]);
  // carol may neither use nor view openfoam: refused as a name that is not defined, naming the
  // alias she gave and not its target (issue 21: a refusal must not tell which profiles exist).
  const carol = admit('carol', 'openfoam-old');
  assert.ok(!carol.ok);
  assert.equal(carol.code, 'profile_not_defined');
  assert.equal(carol.message, 'application profile openfoam-old is not defined');
});

test('each refusal of admission, in its words', () => {
  const cases: Array<[ReturnType<typeof admit>, string, RegExp]> = [
    [admit('alice', null, {}, 'nosuch'), 'queue_not_defined', /^queue nosuch is not defined$/],
    [admit('carol', null, {}, 'night'), 'not_authorized', /queue:submit/],
    [admit('alice', 'newapp'), 'profile_not_defined', /^application profile newapp is not defined$/],
    [
      admit('alice', null, { env: [{ name: 'XCE_JOBID', value: '7' }] }),
      'reserved_env',
      /^environment variable XCE_JOBID: the XCE_ prefix is reserved for XCE itself; rename the variable$/,
    ],
    [admit('alice', null, { resreq: 'select[ib' }), 'resreq_syntax', /^resource requirement: .*column/],
    [admit('alice', null, { resreq: 'select[infiniband]' }), 'unknown_resource', /^resource requirement: .*infiniband/],
    [admit('alice', 'openfoam', { resreq: 'rusage[license_foam=2]' }), 'additive_rule', /license_foam=1/],
    [
      admit('alice', null, { limits: { runtime_s: 0 } }),
      'invalid_job',
      /^a runtime limit of 0 would stop the job at once; give 1s or more, or leave the limit out$/,
    ],
    // The log keeps the job's values in UInt32 and the worker applies memory in KiB: refused at apply too.
    [admit('alice', null, { limits: { memory_bytes: 1500 } }), 'invalid_job', /not a whole number of KiB/],
    [admit('alice', null, { limits: { tasks: 2 ** 32 + 1 } }), 'invalid_job', /Limits\.tasks is a UInt32/],
    [
      admit('alice', null, { tasks: 2 ** 32 + 1 }),
      'invalid_job',
      /^a task count is a whole number from 1 to 1000000, not 4294967297$/,
    ],
    [
      admit('alice', null, { tasks: 1.5 }),
      'invalid_job',
      /^a task count is a whole number from 1 to 1000000, not 1.5$/,
    ],
  ];
  for (const [r, code, re] of cases) {
    assert.ok(!r.ok, `expected a refusal (${code})`);
    assert.equal(r.code, code, r.message);
    assert.match(r.message, re);
  }
});

test('the early check and apply never disagree: same verdict, same code, same words', () => {
  const requests: Array<[string, string | null, Partial<JobSpec>, string]> = [
    ['alice', 'openfoam', {}, 'normal'],
    ['alice', 'openfoam-old', { tasks: 4 }, 'normal'],
    ['carol', 'openfoam', {}, 'normal'],
    ['carol', null, {}, 'night'],
    ['alice', 'fluent', {}, 'normal'],
    ['alice', null, {}, 'nosuch'],
    ['alice', null, { resreq: 'select[infiniband]' }, 'normal'],
    ['alice', null, { resreq: 'select[ib' }, 'normal'],
    ['alice', 'openfoam', { resreq: 'rusage[license_foam=2]' }, 'normal'],
    ['alice', null, { env: [{ name: 'XCE_X', value: '1' }] }, 'normal'],
    ['alice', null, { env: [{ name: 'MY-VAR', value: '1' }] }, 'normal'],
    ['alice', null, { command: [] }, 'normal'],
    ['alice', 'python', { preExec: './pre.sh' }, 'normal'],
  ];
  for (const [user, app, spec, queue] of requests) {
    const early = admit(user, app, spec, queue);
    const state = configuredState(T0);
    const r = apply(
      state,
      encodeFact({
        clientId: null,
        sequence: 0,
        timeMs: T0 + 1,
        body: submitFactFor(config, user, queue, app, jobSpec(spec)),
      }),
      2,
    );
    const label = `${user} ${app} ${queue} ${JSON.stringify(spec)}`;
    if (early.ok) assert.equal(r.kind, 'submitted', label);
    else assert.deepEqual(r, { kind: 'rejected', code: early.code, message: early.message }, label);
  }
});
