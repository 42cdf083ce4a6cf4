import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError, buildJobSpec } from './submit-args.js';

test('submit flags become the job own values, untouched by any profile', () => {
  const job = buildJobSpec(
    {
      app: 'openfoam',
      tasks: '64',
      resreq: 'select[mem>64000]',
      env: ['MY_CASE=cavity', 'EMPTY='],
      limit: ['runtime=1h', 'tasks=8'],
      preExec: './prep.sh',
      output: 'out.txt',
    },
    ['./run.sh', '-case', 'x'],
    '/home/alice',
  );
  assert.deepEqual(job, {
    app: 'openfoam',
    tasks: 64,
    resreq: 'select[mem>64000]',
    env: { MY_CASE: 'cavity', EMPTY: '' },
    limits: { runtime: '1h', tasks: 8 },
    preExec: './prep.sh',
    stdout: 'out.txt',
    command: ['./run.sh', '-case', 'x'],
    cwd: '/home/alice',
  });
});

test('bad flags are refused with the flag named', () => {
  const bad: Array<[Parameters<typeof buildJobSpec>[0], RegExp]> = [
    [{ tasks: 'lots' }, /^-n must be a positive integer, got "lots"$/],
    [{ tasks: '0' }, /^-n must be a positive integer, got "0"$/],
    [{ limit: ['tasks=x'] }, /^--limit tasks must be a positive integer, got "x"$/],
    [{ env: ['NOEQUALS'] }, /--env "NOEQUALS": expected NAME=VALUE/],
    [{ env: ['1BAD=x'] }, /--env "1BAD": environment variable name "1BAD" is not valid/],
    [{ env: ['MY-VAR=x'] }, /--env "MY-VAR": environment variable name "MY-VAR" is not valid/],
    [
      { env: Array.from({ length: 1025 }, (_, i) => `V${i}=1`) },
      /--env: a job may set at most 1024 environment variables, not 1025/,
    ],
    [{ limit: ['runtime=1x'] }, /--limit runtime: bad duration "1x"/],
    [{ env: ['A=1', 'A=2'] }, /--env A is given twice/],
    [{ limit: ['walltime=1h'] }, /--limit walltime: unknown limit; use one of runtime, memory, cpu, tasks/],
  ];
  for (const [flags, re] of bad)
    assert.throws(
      () => buildJobSpec(flags, ['x'], '/'),
      (e: unknown) => e instanceof UsageError && re.test(e.message),
    );
  assert.throws(() => buildJobSpec({}, [], '/'), /no command given/);
});
