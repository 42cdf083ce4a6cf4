// `jobs list` pages: newest first, a cursor (`after`: the last shown id), the total of every match.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { TestCluster } from '../testing/scheduler-cluster.js';
import { pageJobs } from './queries.js';

test('1,041 jobs: a page of 1,000 (1041..42), the total and the cursor 42; the next page 41..1 and no cursor', () => {
  const c = new TestCluster({ hosts: '  - { name: n1, slots: 1, mem: 1G }\n' });
  for (let i = 0; i < 1041; i++) c.submit('serial');
  const all = () => true;
  const first = pageJobs(c.state, all, 1000, null);
  assert.equal(first.jobs.length, 1000);
  assert.deepEqual([first.jobs[0]!.id, first.jobs[999]!.id], [1041, 42]);
  assert.equal(first.total, 1041);
  assert.equal(first.next, 42);
  const second = pageJobs(c.state, all, 1000, first.next);
  assert.deepEqual(
    second.jobs.map((j) => j.id),
    Array.from({ length: 41 }, (_, i) => 41 - i),
  );
  assert.equal(second.total, 1041);
  assert.equal(second.next, null);
  // A filter counts only its matches; a page that ends exactly at the last match has no cursor.
  const even = pageJobs(c.state, (j) => j.id % 2 === 0, 520, null);
  assert.equal(even.total, 520);
  assert.equal(even.next, null);
  assert.equal(pageJobs(c.state, (j) => j.id % 2 === 0, 519, null).next, 4);
});
