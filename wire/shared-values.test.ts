// Repeated small decoded values are shared between facts, frozen, and a cache never changes what a
// fact decodes to; facts cut from a shared slab each keep bytes of their own.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { decodeFact, encodeFact } from '../statemachine/facts-codec.js';
import type { Fact, JobSpec } from '../statemachine/facts.js';
import { mixKey, SharedValues } from './shared-values.js';
import { jobSpec } from '../testing/test-cluster.js';

function submit(spec: JobSpec, i = 0): Fact {
  return {
    clientId: `c-${i}`,
    sequence: i + 1,
    timeMs: 1_700_000_000_000 + i,
    body: {
      kind: 'submit',
      user: 'alice',
      queue: 'normal',
      profile: 'serial',
      profileRequested: null,
      spec,
      dependency: null,
      dependencyKill: false,
    },
  };
}

function specOf(f: Fact): JobSpec {
  assert.equal(f.body.kind, 'submit');
  return f.body.kind === 'submit' ? f.body.spec : jobSpec();
}

test('a cache slot must be a power of two', () => {
  assert.throws(() => new SharedValues<string>(1000), RangeError);
  assert.doesNotThrow(() => new SharedValues<string>(1024));
});

test('a slot read again since the last miss keeps its value (second chance); one that was not gives way', () => {
  const c = new SharedValues<string>(1);
  const a = mixKey(1, 2);
  const b = mixKey(3, 4);
  assert.equal(c.admit(a), true);
  c.set(a, 'a');
  c.hit(a);
  assert.equal(c.admit(b), false, 'a was read again: b waits');
  assert.equal(c.candidate(b), 'a');
  assert.equal(c.admit(b), true, 'a was not read since: b takes the slot');
  c.set(b, 'b');
  assert.equal(c.candidate(a), 'b');
});

test('repeated env lists, argvs and limits decode to one frozen object; mutating it throws', () => {
  const spec = jobSpec({
    env: [{ name: 'OMP_NUM_THREADS', value: '1' }],
    command: ['./run.sh', '-v'],
    limits: { runtime_s: 600 },
  });
  const bytes = encodeFact(submit(spec));
  const first = specOf(decodeFact(bytes));
  const second = specOf(decodeFact(bytes));
  const third = specOf(decodeFact(bytes));
  // The first decode offers the values to the cache; from then on they are shared.
  assert.equal(second.env, third.env);
  assert.equal(second.command, third.command);
  assert.equal(second.limits, third.limits);
  for (const s of [first, second, third]) {
    assert.deepStrictEqual(s.env, spec.env);
    assert.deepStrictEqual(s.command, spec.command);
    assert.deepStrictEqual(s.limits, spec.limits);
  }
  assert.ok(
    Object.isFrozen(third.env) &&
      Object.isFrozen(third.env[0]) &&
      Object.isFrozen(third.command) &&
      Object.isFrozen(third.limits),
  );
  assert.throws(() => (third.command as string[]).push('x'), TypeError);
  assert.throws(() => {
    (third.env[0] as { value: string }).value = '2';
  }, TypeError);
});

test('values that collide, differ by one element or one character, or never repeat still decode to themselves', () => {
  const specs: JobSpec[] = [];
  for (let i = 0; i < 3000; i++) {
    specs.push(
      jobSpec({
        env:
          i % 3 === 0
            ? []
            : [{ name: 'CASE', value: `case-${i % 50}` }, ...(i % 7 === 0 ? [{ name: 'X', value: String(i) }] : [])],
        command:
          i % 5 === 0 ? ['./run.sh'] : ['./run.sh', `--case=${i % 40}`, ...(i % 11 === 0 ? [`--seed=${i}`] : [])],
        limits:
          i % 4 === 0 ? {} : { runtime_s: 60 * (1 + (i % 9)), ...(i % 13 === 0 ? { memory_bytes: 2 ** 33 + i } : {}) },
        jobName: `j-${i}`,
      }),
    );
  }
  // Twice over, so that the second pass reads through a warm cache.
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < specs.length; i++)
      assert.deepStrictEqual(
        specOf(decodeFact(encodeFact(submit(specs[i]!, i)))),
        specs[i],
        `spec ${i}, round ${round}`,
      );
  }
});

test('facts cut from one slab each keep bytes of their own', () => {
  const facts = Array.from({ length: 600 }, (_, i) =>
    submit(jobSpec({ command: ['./run.sh', `--n=${i}`], jobName: `job-${i}` }), i),
  );
  const encoded = facts.map((f) => encodeFact(f)); // 600 facts of a few hundred bytes span several 64 KiB slabs
  assert.ok(new Set(encoded.map((b) => b.buffer)).size > 1, 'the facts span more than one slab');
  assert.ok(
    encoded.some((b, i) => i > 0 && b.buffer === encoded[i - 1]!.buffer),
    'consecutive facts share a slab',
  );
  for (let i = 0; i < facts.length; i++) assert.deepStrictEqual(decodeFact(encoded[i]!), facts[i]);
  encoded[10]!.fill(0xff); // one fact's bytes overwritten: its neighbours are untouched
  assert.deepStrictEqual(decodeFact(encoded[9]!), facts[9]);
  assert.deepStrictEqual(decodeFact(encoded[11]!), facts[11]);
  // A large fact (a configuration) gets an ArrayBuffer of its own.
  const config = encodeFact({
    clientId: null,
    sequence: 0,
    timeMs: 1,
    body: { kind: 'config', files: [{ path: 'xce.yaml', text: 'x'.repeat(20_000) }], user: null },
  });
  assert.equal(config.byteOffset, 0);
  assert.equal(config.buffer.byteLength, config.byteLength);
});
