// Resource amounts are whole thousandths (amount.ts). An amount finer than 0.001, or too large for
// milli-units to count exactly, is refused where it is written: hosts.yaml numerics, resources.yaml
// totals, an application profile's rusage at config load, and a job's -R rusage at submit.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import fc from 'fast-check';
import { AMOUNT_MAX, AmountPrecisionError, amountProblem, fromMilli, toMilli } from './amount.js';
import { apply } from '../statemachine/apply.js';
import { loadConfig } from './config.js';
import type { Diagnostic } from './config-types.js';
import { submitFactFor } from '../statemachine/jobs.js';
import { parseResReq, ResReqSyntaxError } from './resreq.js';
import { emptyState } from '../statemachine/state.js';
import { jobSpec, testClusterFiles } from '../testing/test-cluster.js';

const FINE =
  'has more precision than 0.001: resource amounts are counted in thousandths, write at most 3 decimal places';

test('amounts convert to exact milli-units and back: 0.1 is 100, 1.005 is 1005, 0.3 + 0.4 - 0.4 is 0.3', () => {
  assert.equal(toMilli(0.1, 'x'), 100);
  assert.equal(toMilli(1.005, 'x'), 1005);
  assert.equal(toMilli(64000, 'x'), 64_000_000);
  assert.ok(Number.isSafeInteger(toMilli(AMOUNT_MAX, 'x')));
  assert.ok(Object.is(toMilli(-0, 'x'), 0));
  assert.equal(fromMilli(toMilli(0.3, 'x') + toMilli(0.4, 'x') - toMilli(0.4, 'x')), 0.3);
  assert.notEqual(0.3 + 0.4 - 0.4, 0.3); // what floating-point accounting held
});

test('any whole number of thousandths round-trips, and a sum of them does not depend on its order', () => {
  fc.assert(
    fc.property(fc.array(fc.nat({ max: 1e9 }), { maxLength: 20 }), (millis) => {
      const amounts = millis.map(fromMilli);
      for (let i = 0; i < amounts.length; i++) assert.equal(toMilli(amounts[i]!, 'x'), millis[i]);
      const forward = amounts.reduce((s, a) => s + toMilli(a, 'x'), 0);
      const backward = [...amounts].reverse().reduce((s, a) => s + toMilli(a, 'x'), 0);
      assert.equal(forward, backward);
    }),
  );
});

test('an amount finer than 0.001 or beyond the safe range is refused with the value named', () => {
  assert.equal(amountProblem(0.0005), `the amount 0.0005 ${FINE}`);
  assert.equal(amountProblem(2.0001), `the amount 2.0001 ${FINE}`);
  assert.equal(
    amountProblem(1e13),
    `the amount 10000000000000 is out of range: resource amounts are counted in thousandths and must lie within ±${AMOUNT_MAX}`,
  );
  assert.match(amountProblem(Infinity) ?? '', /out of range/);
  assert.throws(
    () => toMilli(0.0005, 'hosts.yaml host n1 numeric mem'),
    (e: unknown) => {
      assert.ok(e instanceof AmountPrecisionError);
      assert.equal(e.message, `hosts.yaml host n1 numeric mem: the amount 0.0005 ${FINE}`);
      return true;
    },
  );
});

test('a rusage amount finer than 0.001 is a resreq error at its column', () => {
  assert.throws(
    () => parseResReq('rusage[mem=0.0005]'),
    (e: unknown) => {
      assert.ok(e instanceof ResReqSyntaxError);
      assert.equal(e.column, 12);
      assert.equal(
        e.message,
        `resource requirement "rusage[mem=0.0005]", column 12: rusage value of mem: the amount 0.0005 ${FINE}`,
      );
      return true;
    },
  );
  assert.equal(parseResReq('rusage[mem=0.125]').kind, 'simple');
});

function configErrors(edit: (path: string, text: string) => string): readonly Diagnostic[] {
  const r = loadConfig(testClusterFiles().map((f) => ({ path: f.path, text: edit(f.path, f.text) })));
  assert.equal(r.ok, false, 'the configuration should be refused');
  return r.ok ? [] : r.errors;
}

test('config load refuses a host numeric, a pool total and a profile rusage that milli-units cannot hold', () => {
  const host = configErrors((p, t) =>
    p === 'hosts.yaml'
      ? t.replace('numeric: { mem: 64000 } }\n  - { name: n2', 'numeric: { mem: 2.0005 } }\n  - { name: n2')
      : t,
  );
  assert.deepEqual(
    host.map((d) => [d.file, d.entry, d.field, d.message]),
    [['hosts.yaml', 'n1', 'numeric.mem', `the amount 2.0005 ${FINE}`]],
  );
  const total = configErrors((p, t) => (p === 'resources.yaml' ? t.replace('total: 4', 'total: 9007199254741') : t));
  assert.deepEqual(
    total.map((d) => [d.file, d.entry, d.field, d.message]),
    [
      [
        'resources.yaml',
        'license_foam',
        'total',
        `the amount 9007199254741 is out of range: resource amounts are counted in thousandths and must lie within ±${AMOUNT_MAX}`,
      ],
    ],
  );
  const profile = configErrors((p, t) =>
    p === 'applications.yaml' ? t.replace('rusage[license_foam=1]', 'rusage[license_foam=0.0001]') : t,
  );
  assert.equal(profile.length, 1);
  assert.equal(profile[0]!.file, 'applications.yaml');
  assert.match(profile[0]!.message, new RegExp(`rusage value of license_foam: the amount 0.0001 ${FINE}`));
});

test('a submit whose -R reserves an amount finer than 0.001 is refused; 0.001 is accepted', () => {
  const s = emptyState();
  let index = 0;
  const timeMs = 1_764_547_200_000;
  assert.equal(
    apply(
      s,
      { clientId: null, sequence: 0, timeMs, body: { kind: 'config', files: testClusterFiles(), user: null } },
      ++index,
    ).kind,
    'configApplied',
  );
  const submit = (resreq: string) =>
    apply(
      s,
      {
        clientId: null,
        sequence: 0,
        timeMs,
        body: submitFactFor(s.config!.cluster, 'alice', 'normal', null, jobSpec({ resreq })),
      },
      ++index,
    );
  const r = submit('rusage[mem=0.0005]');
  assert.equal(r.kind, 'rejected');
  assert.equal((r as { code: string }).code, 'resreq_syntax');
  assert.match((r as { message: string }).message, new RegExp(`rusage value of mem: the amount 0.0005 ${FINE}`));
  assert.equal(submit('rusage[mem=0.001]').kind, 'submitted');
});
