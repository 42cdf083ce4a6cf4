import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { formatDuration, formatSize, parseDuration, parseSize, UnitSyntaxError } from './units.js';

test('durations read as admins write them', () => {
  assert.equal(parseDuration('24h'), 86_400);
  assert.equal(parseDuration('90m'), 5_400);
  assert.equal(parseDuration('30s'), 30);
  assert.equal(parseDuration('1h30m'), 5_400);
  assert.equal(parseDuration('2d'), 172_800);
  assert.equal(parseDuration('45'), 45);
});

test('durations format back to the largest exact unit', () => {
  assert.equal(formatDuration(86_400), '24h');
  assert.equal(formatDuration(172_800), '48h');
  assert.equal(formatDuration(3_600 * 24 + 3_600), '25h');
  assert.equal(formatDuration(5_400), '90m');
  assert.equal(formatDuration(90), '90s');
  assert.equal(formatDuration(0), '0s');
});

test('bad durations are refused with what was expected', () => {
  for (const bad of ['', 'h', '1x', '30m1h', '1h1h', '1.5h', '-1h']) {
    assert.throws(
      () => parseDuration(bad),
      (e: unknown) => e instanceof UnitSyntaxError && e.kind === 'duration' && /duration/.test(e.message),
      bad,
    );
  }
});

test('sizes use binary units and format back exactly', () => {
  assert.equal(parseSize('128G'), 128 * 1024 ** 3);
  assert.equal(parseSize('512M'), 512 * 1024 ** 2);
  assert.equal(parseSize('4096K'), 4096 * 1024);
  assert.equal(parseSize('128GiB'), 128 * 1024 ** 3);
  assert.equal(parseSize('1000'), 1000);
  assert.equal(formatSize(128 * 1024 ** 3), '128G');
  assert.equal(formatSize(4096 * 1024), '4M');
  assert.equal(formatSize(1536), '1536');
  assert.throws(() => parseSize('12X'), UnitSyntaxError);
  assert.throws(() => parseSize('1.5G'), UnitSyntaxError);
});

test('format then parse is the identity for durations and sizes', () => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 10 ** 9 }), (s) => parseDuration(formatDuration(s)) === s));
  fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 50 }), (b) => parseSize(formatSize(b)) === b));
});
