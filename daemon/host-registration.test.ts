// A re-registration with the same resources proposes no new fact (sameResources): compared field
// by field, lists in canonical order (registrationOf), the time aside; any other difference counts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { registrationOf, sameResources } from './host-registration.js';
import type { Resources } from './worker-protocol.js';

const base: Resources = {
  slots: 8,
  mem_bytes: 64 * 2 ** 30,
  booleans: ['ib', 'x86_64'],
  numerics: { gpu: 2, scratch: 100 },
  strings: { arch: 'x86_64', os: 'linux' },
};

test('the same resources at another time, in another order, are the same registration', () => {
  const a = registrationOf('n1', base, 1);
  const b = registrationOf(
    'n1',
    {
      ...base,
      booleans: ['x86_64', 'ib', 'ib'],
      numerics: { scratch: 100, gpu: 2 },
      strings: { os: 'linux', arch: 'x86_64' },
    },
    2,
  );
  assert.ok(sameResources(a, b));
  assert.ok(sameResources(b, a));
});

test('any other host, count, list or value is a different registration', () => {
  const a = registrationOf('n1', base, 1);
  const differing: Array<[string, ReturnType<typeof registrationOf>]> = [
    ['host', registrationOf('n2', base, 1)],
    ['slots', registrationOf('n1', { ...base, slots: 4 }, 1)],
    ['memory', registrationOf('n1', { ...base, mem_bytes: 2 ** 30 }, 1)],
    ['a boolean less', registrationOf('n1', { ...base, booleans: ['ib'] }, 1)],
    ['no booleans stated', registrationOf('n1', { slots: 8, mem_bytes: base.mem_bytes, numerics: base.numerics }, 1)],
    ['empty booleans', registrationOf('n1', { ...base, booleans: [] }, 1)],
    ['a numeric value', registrationOf('n1', { ...base, numerics: { gpu: 3, scratch: 100 } }, 1)],
    ['a numeric name', registrationOf('n1', { ...base, numerics: { gpus: 2, scratch: 100 } }, 1)],
    ['a numeric more', registrationOf('n1', { ...base, numerics: { ...base.numerics, fpga: 1 } }, 1)],
    ['a string value', registrationOf('n1', { ...base, strings: { arch: 'arm64', os: 'linux' } }, 1)],
    ['no strings stated', registrationOf('n1', { ...base, strings: undefined }, 1)],
  ];
  for (const [what, b] of differing) {
    assert.equal(sameResources(a, b), false, what);
    assert.equal(sameResources(b, a), false, `${what} (the other way)`);
  }
  const none = registrationOf('n1', { slots: 8, mem_bytes: 1, numerics: {} }, 1);
  assert.ok(sameResources(none, registrationOf('n1', { slots: 8, mem_bytes: 1, numerics: {} }, 5)));
});
