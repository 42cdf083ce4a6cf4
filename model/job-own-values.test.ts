// A client's job values → JobOwnValues: normalised (env sorted, units converted) or refused with a
// typed error naming the field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jobOwnValues, JobValueError } from './job-own-values.js';

test('job values are normalised: env sorted, units converted, empty strings unset', () => {
  const v = jobOwnValues({
    resreq: 'select[ib]',
    tasks: 4,
    env: { ZED: '1', ALPHA: '2' },
    limits: { runtime: '1h30m', memory: '4G', cpu: 60, tasks: 100 },
    preExec: '',
    postExec: './post.sh',
  });
  assert.deepEqual(v.env, [
    { name: 'ALPHA', value: '2' },
    { name: 'ZED', value: '1' },
  ]);
  assert.deepEqual(v.limits, { runtime_s: 5400, memory_bytes: 4 * 1024 ** 3, cpu_s: 60, tasks: 100 });
  assert.equal(v.preExec, null);
  assert.equal(v.postExec, './post.sh');
  assert.equal(v.resreq?.kind, 'simple');
  assert.deepEqual(jobOwnValues({}), { resreq: null, tasks: null, env: [], limits: {}, preExec: null, postExec: null });
  assert.equal(jobOwnValues({ resreq: '   ' }).resreq, null);
});

test('malformed job values are refused with the field named', () => {
  const cases: Array<[Parameters<typeof jobOwnValues>[0], string, RegExp]> = [
    [{ resreq: 'select[ib' }, 'resreq', /column 10: expected "\]"/],
    [{ tasks: 0 }, 'tasks', /at least 1, not 0/],
    [{ tasks: 1.5 }, 'tasks', /whole number/],
    [{ env: { '1BAD': 'x' } }, 'env', /name "1BAD" is not valid/],
    [{ limits: { runtime: '1x' } }, 'limits.runtime', /bad duration "1x"/],
    [{ limits: { memory: '0' } }, 'limits.memory', /larger than zero/],
  ];
  for (const [input, field, re] of cases) {
    assert.throws(
      () => jobOwnValues(input),
      (e: unknown) => e instanceof JobValueError && e.field === field && re.test(e.message),
      JSON.stringify(input),
    );
  }
});
