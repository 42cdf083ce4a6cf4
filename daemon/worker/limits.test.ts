// The worker honours every limit admission accepts exactly as given (issue 22): what the dry run
// shows and the record holds is what `ulimit` sets, never a rounded value.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { LIMIT_DURATION_S_MAX, limitValueProblem, MEMORY_LIMIT_BYTES_MAX } from '../../model/limit-values.js';
import { CPU_HARD_GRACE_S, ulimitScript } from './limits.js';

test('every cpu and memory limit a profile or job may set is applied by ulimit exactly (property)', () => {
  fc.assert(
    fc.property(
      fc.oneof(fc.integer({ min: 0, max: 1 << 20 }), fc.integer({ min: 0, max: MEMORY_LIMIT_BYTES_MAX + 4096 })),
      fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 0, max: LIMIT_DURATION_S_MAX + 10 })),
      (memory_bytes, cpu_s) => {
        if (limitValueProblem('memory_bytes', memory_bytes) === null) {
          const m = /ulimit -v (\d+) /.exec(ulimitScript({ memory_bytes }));
          assert.ok(m);
          assert.equal(Number(m[1]) * 1024, memory_bytes, `memory ${memory_bytes} applied as ${m[1]} KiB`);
        }
        if (limitValueProblem('cpu_s', cpu_s) === null) {
          const m = /ulimit -S -t (\d+) && ulimit -H -t (\d+) /.exec(ulimitScript({ cpu_s }));
          assert.ok(m);
          assert.equal(Number(m[1]), cpu_s);
          assert.equal(Number(m[2]), cpu_s + CPU_HARD_GRACE_S);
          assert.ok(Number.isSafeInteger(cpu_s + CPU_HARD_GRACE_S));
        }
      },
    ),
    { numRuns: 2000 },
  );
});

test('a memory limit the worker would round up is refused, not applied rounded', () => {
  assert.match(limitValueProblem('memory_bytes', 1500) ?? '', /not a whole number of KiB/);
  assert.match(ulimitScript({ memory_bytes: 2048 }), /ulimit -v 2 /);
});
