// `jobs list` tells when it shows only a page (the footer, and `next` in --json), `xcecli hosts` and
// `cluster status` show where a worker registers other resources than hosts.yaml allows, and every
// numeric flag says what it expects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { positiveInteger, UsageError } from './numeric-flags.js';
import { jobListFooter, renderClusterStatus, renderHostList, renderJobList } from './render.js';
import { jobListArgs } from './xcecli-program.js';

const row = (id: number) => ({ id, user: 'alice', state: 'DONE', queue: 'normal', app: 'python', command: 'true' });

test('the footer says how many of how many jobs are shown, and the cursor of the next page', () => {
  assert.equal(jobListFooter(1000, 1041, 42), '1,000 of 1,041 jobs shown; --after 42 for more\n');
  assert.equal(jobListFooter(41, 1041, null), '41 of 1,041 jobs shown\n');
  assert.equal(jobListFooter(3, 3, null), '', 'every job shown: no footer');
  const out = renderJobList({ jobs: [row(5), row(4)], total: 5, next: 4 }, false);
  assert.match(out, /^JOBID/);
  assert.ok(out.endsWith('\n2 of 5 jobs shown; --after 4 for more\n'), out);
  assert.equal(renderJobList({ jobs: [], total: 0, next: null }, false), 'No jobs.\n');
});

test('numeric flags name the flag, what it expects and what it got, never a validator text', () => {
  assert.throws(() => jobListArgs({ limit: 'abc' }), {
    name: 'UsageError',
    message: '--limit must be a positive integer, got "abc"',
  });
  assert.throws(() => jobListArgs({ limit: '20000' }), { message: '--limit must be at most 10000, got "20000"' });
  assert.throws(() => jobListArgs({ after: '-1' }), { message: '--after must be a positive integer, got "-1"' });
  for (const bad of ['', '0', '1.5', '1e3', ' 7', '0x10', '99999999999999999999'])
    assert.throws(
      () => positiveInteger('--ttl', bad),
      (e: unknown) => e instanceof UsageError && e.message === `--ttl must be a positive integer, got "${bad}"`,
    );
  assert.deepEqual(jobListArgs({ state: 'RUN', limit: '10', after: '42' }), { state: 'RUN', limit: 10, after: 42 });
});

const GIB = 2 ** 30;
/** A host row of `xcecli hosts` whose hosts.yaml entry allows 64 slots and 256G. */
const host = (name: string, status: string, slots: number, slotsUsed: number, mem_bytes: number) => ({
  name,
  status,
  slots,
  slotsUsed,
  mem_bytes,
  configured: { slots: 64, mem_bytes: 256 * GIB },
});

test('xcecli hosts shows the capacity used, what hosts.yaml and the worker say, and each disagreement', () => {
  const out = renderHostList(
    {
      statusFrom: 2,
      hosts: [
        {
          ...host('node01', 'ok', 8, 3, 8 * GIB),
          registered: { slots: 8, mem_bytes: 8 * GIB, timeMs: 1 },
          mismatches: ['node01: registers 8 slots, hosts.yaml allows 64: using 8'],
        },
        { ...host('node02', 'unavail', 64, 0, 256 * GIB), registered: null, mismatches: [] },
      ],
    },
    false,
  );
  assert.match(out, /^HOST +STATUS +SLOTS +USED +HOSTS\.YAML +REGISTERED +MEM\n/);
  assert.match(out, /\nnode01 +ok +8 +3 +64 +8 +8G\n/);
  assert.match(out, /\nnode02 +unavail +64 +0 +64 +never +256G\n/);
  assert.match(out, /\nnode01: registers 8 slots, hosts\.yaml allows 64: using 8\n$/);
});

test('cluster status lists the hosts whose registration differs from hosts.yaml', () => {
  const out = renderClusterStatus(
    {
      node: 1,
      leader: 1,
      members: [],
      jobs: { PEND: 0 },
      hostMismatches: ['node01: registers 8 slots, hosts.yaml allows 64: using 8'],
    },
    false,
  );
  assert.match(out, /Hosts registering other resources than hosts\.yaml allows:\n {2}node01: registers 8 slots/);
});
