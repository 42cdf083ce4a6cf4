import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseArrayName } from './job-array.js';
import { elementId, formatJobId, parseJobId } from './job-id.js';
import { formatDependency, parseDependency } from './dependency.js';

test('array names: ranges, steps, lists and %N; plain names stay plain', () => {
  assert.deepEqual(parseArrayName('plain', 10), { kind: 'plain' });
  assert.deepEqual(parseArrayName(null, 10), { kind: 'plain' });
  const a = parseArrayName('sweep[1-5]%2', 100);
  assert.deepEqual(a, { kind: 'array', spec: { name: 'sweep', indices: [1, 2, 3, 4, 5], limit: 2 } });
  const b = parseArrayName('s[1-20:10]', 100);
  assert.deepEqual(b.kind === 'array' && b.spec.indices, [1, 11]);
  const c = parseArrayName('s[9-12,1,5,5]', 100);
  assert.deepEqual(c.kind === 'array' && c.spec.indices, [1, 5, 9, 10, 11, 12]);
});

test('malformed array names and sizes above array_size_max are refused naming the problem', () => {
  const msg = (n: string, max = 100): string => {
    const r = parseArrayName(n, max);
    return r.kind === 'error' ? r.message : 'accepted';
  };
  assert.match(msg('s[1-x]'), /"1-x" is not an index, a range FROM-TO or FROM-TO:STEP/);
  assert.match(msg('s[5-1]'), /range 5-1 ends before it starts/);
  assert.match(msg('s[0-3]'), /index 0 is below 1/);
  assert.match(msg('s[1-3]%0'), /%0 is not a positive whole number/);
  assert.match(msg('[1-3]'), /no name before \[/);
  assert.match(msg('s[1-3]x'), /one \[\.\.\.\] at the end/);
  assert.match(msg('s[]'), /the index list is empty/);
  assert.match(msg('s[1-101]'), /its 101 elements are more than the cluster's array_size_max \(100, xce\.yaml\)/);
  assert.match(msg('s[1-99999999]', 10 ** 9), /above the largest index, 9999999/);
});

test('element ids: ID[INDEX] round trips, plain ids stay below the element range', () => {
  const e = elementId(42, 7);
  assert.equal(formatJobId(e), '42[7]');
  assert.equal(parseJobId('42[7]'), e);
  assert.equal(parseJobId('42'), 42);
  assert.equal(formatJobId(42), '42');
  for (const bad of ['42[0]', '42[', 'x', '0', '42[7]x']) assert.equal(parseJobId(bad), null, bad);
});

test('dependency expressions parse, print canonically and read back the same', () => {
  for (const t of [
    'done(1)',
    'done(1) && ended(2[*])',
    '!exit(3[4]) || (started(a) && done(b.c))',
    '!(done(7) || exit(8))',
  ])
    assert.equal(
      formatDependency(parseDependency(formatDependency(parseDependency(t)))),
      formatDependency(parseDependency(t)),
    );
  assert.equal(formatDependency(parseDependency(' done( 1 )&&!ended(sweep[*]) ')), 'done(1) && !ended(sweep[*])');
  const bad = (t: string): string => {
    try {
      parseDependency(t);
      return 'accepted';
    } catch (e) {
      return (e as Error).message;
    }
  };
  assert.match(bad('finished(1)'), /unknown condition "finished" at column 1; use done, exit, ended or started/);
  assert.match(bad('done(1'), /expected "\)" after done\(1 at column 7/);
  assert.match(bad('done(1) done(2)'), /unexpected "done" at column 9 \(join conditions with && or \|\|\)/);
  assert.match(bad(''), /it is empty/);
  assert.match(bad('done(1[0])'), /index 0 at column 6/);
  assert.match(bad('done(1) & done(2)'), /unexpected "&" at column 9/);
});
