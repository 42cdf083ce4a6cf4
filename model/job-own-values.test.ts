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
    [{ tasks: 0 }, 'tasks', /a task count is a whole number from 1 to 1000000, not 0/],
    [{ tasks: 1.5 }, 'tasks', /whole number/],
    // JobSpec.tasks is a UInt32: a larger count would be stored truncated (4294967297 as 1).
    [{ tasks: 4294967297 }, 'tasks', /from 1 to 1000000, not 4294967297/],
    [{ env: { '1BAD': 'x' } }, 'env', /name "1BAD" is not valid/],
    [{ limits: { runtime: '1x' } }, 'limits.runtime', /bad duration "1x"/],
    [{ limits: { memory: '0' } }, 'limits.memory', /a memory limit of 0 would stop the job at once; give 1K or more/],
  ];
  for (const [input, field, re] of cases) {
    assert.throws(
      () => jobOwnValues(input),
      (e: unknown) => e instanceof JobValueError && e.field === field && re.test(e.message),
      JSON.stringify(input),
    );
  }
});

test('a limit of zero is refused at submit with the rule named, for every limit', () => {
  for (const [key, field, input] of [
    ['runtime', 'limits.runtime', '0'],
    ['runtime', 'limits.runtime', '0s'],
    ['cpu', 'limits.cpu', '0m'],
    ['memory', 'limits.memory', '0G'],
  ] as const) {
    assert.throws(
      () => jobOwnValues({ limits: { [key]: input } }),
      (e: unknown) =>
        e instanceof JobValueError &&
        e.field === field &&
        e.message.includes(`a ${key} limit of 0 would stop the job at once`) &&
        e.message.includes('or leave the limit out'),
      `${key}=${input}`,
    );
  }
  assert.throws(() => jobOwnValues({ limits: { tasks: 0 } }), /a tasks limit of 0 would stop the job at once/);
});

test('a limit the worker would not honour as given is refused, never rounded', () => {
  // The worker sets memory limits in KiB (ulimit -v): 1500 bytes would run as 2K.
  assert.throws(
    () => jobOwnValues({ limits: { memory: '1500' } }),
    (e: unknown) =>
      e instanceof JobValueError &&
      e.field === 'limits.memory' &&
      /a memory limit of 1500 bytes is not a whole number of KiB: .* give 1K or 2K/.test(e.message),
  );
  assert.deepEqual(jobOwnValues({ limits: { memory: '2048' } }).limits, { memory_bytes: 2048 });
  assert.throws(
    () => jobOwnValues({ limits: { runtime: '1000001h' } }),
    /a runtime limit of 1000001h is too long; at most 1000000h/,
  );
  assert.throws(() => jobOwnValues({ limits: { memory: '5P' } }), /a memory limit of 5P is too large; at most 4P/);
  assert.throws(() => jobOwnValues({ limits: { tasks: 2 ** 32 } }), /Limits\.tasks is a UInt32, so at most 4294967295/);
});
