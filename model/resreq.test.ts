import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  checkResReqResources,
  formatResReq,
  formatSelectExpr,
  parseResReq,
  ResReqSyntaxError,
  type ResourceRef,
} from './resreq.js';
import type { ResReq } from './profile-types.js';
import { arbCompoundResReq, arbSimpleResReq } from '../testing/resreq-arbitrary.js';

function simple(text: string): ResReq {
  const r = parseResReq(text);
  assert.equal(r.kind, 'simple');
  return r as ResReq;
}

test('the sections of an LSF-style requirement parse into terms', () => {
  const r = simple(
    'select[ib && mem>64000 && (a100 || h100)] rusage[license_foam=1, mem=4000:duration=30m] span[ptile=16] same[model] order[-slots:maxmem]',
  );
  assert.deepEqual(r.select.map(formatSelectExpr), ['ib', 'mem>64000', 'a100 || h100']);
  assert.deepEqual(r.rusage, [
    { name: 'license_foam', value: 1 },
    { name: 'mem', value: 4000, duration_s: 1800 },
  ]);
  assert.deepEqual(r.span, { ptile: 16 });
  assert.deepEqual(r.same, ['model']);
  assert.deepEqual(r.order, [
    { name: 'slots', descending: true },
    { name: 'maxmem', descending: false },
  ]);
});

test('sections may come in any order and format canonically', () => {
  assert.equal(
    formatResReq(parseResReq('  rusage[ license_foam = 1 ]   select[ ib ]  ')),
    'select[ib] rusage[license_foam=1]',
  );
  assert.equal(formatResReq(parseResReq('span[hosts=1] select[x86_64]')), 'select[x86_64] span[hosts=1]');
  assert.equal(formatResReq(parseResReq('rusage[mem=100:swp=50:duration=10]')), 'rusage[mem=100,swp=50:duration=10m]');
  assert.equal(
    formatResReq(parseResReq('select[type=X86_64 && !gpu && model=="A 100"]')),
    'select[type==X86_64 && !gpu && model=="A 100"]',
  );
  assert.equal(formatResReq(parseResReq('select[!(a || b) && (c && d)]')), 'select[!(a || b) && c && d]');
  assert.equal(formatResReq(parseResReq('')), '');
});

test('a lone || term needs no parentheses, one among others does', () => {
  assert.equal(formatResReq(parseResReq('select[a100 || h100]')), 'select[a100 || h100]');
  assert.equal(formatResReq(parseResReq('select[ib && (a100 || h100)]')), 'select[ib && (a100 || h100)]');
});

test('compound and alternative requirements parse as such', () => {
  const c = parseResReq('{select[ib] rusage[mem=1000]} + {select[gpu]}');
  assert.equal(c.kind, 'compound');
  assert.equal(c.kind === 'compound' && c.operator, '+');
  assert.equal(formatResReq(c), '{select[ib] rusage[mem=1000]} + {select[gpu]}');
  const alt = parseResReq('select[ib] || select[gpu]');
  assert.equal(alt.kind === 'compound' && alt.operator, '||');
  assert.equal(formatResReq(alt), '{select[ib]} || {select[gpu]}');
});

function syntaxError(text: string): ResReqSyntaxError {
  try {
    parseResReq(text);
  } catch (e) {
    if (e instanceof ResReqSyntaxError) return e;
    throw e;
  }
  assert.fail(`"${text}" parsed but should not have`);
}

test('syntax errors name the column of the problem and what was expected', () => {
  const cases: Array<[string, number, RegExp]> = [
    ['select[ib', 10, /expected "]" to close select\[/],
    ['selct[ib]', 1, /unknown section "selct": expected one of select, rusage, span, same, order/],
    ['select[ib] select[gpu]', 12, /select\[\.\.\.\] appears twice/],
    ['select[]', 8, /select\[\] is empty/],
    ['select[mem>]', 12, /expected a number, a name or a "quoted string"/],
    ['select[(ib]', 11, /expected "\)"/],
    ['rusage[mem=-1]', 12, /must not be negative/],
    ['rusage[mem=1, mem=2]', 15, /rusage names mem twice/],
    ['rusage[mem=x]', 12, /expected a number for mem/],
    ['span[ptile=0]', 12, /span ptile must be a whole number from 1 to 4294967295, not 0/],
    // Span.ptile is a UInt32: 4294967297 would be stored (and hashed) as 1.
    ['span[ptile=4294967297]', 12, /span ptile must be a whole number from 1 to 4294967295, not 4294967297/],
    ['span[hosts=4294967296]', 12, /span hosts must be a whole number from 1 to 4294967295/],
    ['rusage[mem=1:duration=999999999999999999]', 23, /duration 999999999999999999 \(minutes\) is too large/],
    ['span[tile=2]', 6, /span supports ptile and hosts, not tile/],
    ['order[-]', 8, /expected a resource name to order by/],
    ['select[ib] + select[a] || select[b]', 24, /cannot mix "\+" and "\|\|"/],
    ['select[model=="A100]', 15, /unterminated string/],
    ['rusage[mem=1:duration=1x]', 23, /bad duration/],
    ['select[ib] junk', 12, /unknown section "junk"/],
    ['select[ib] ]', 12, /expected a section \(select, rusage, span, same, order\) but found "\]"/],
  ];
  for (const [text, column, re] of cases) {
    const e = syntaxError(text);
    assert.equal(e.column, column, `column of "${text}": ${e.message}`);
    assert.match(e.message, re, text);
    assert.ok(e.message.includes(`column ${column}`), e.message);
  }
});

test('nesting is bounded', () => {
  assert.match(syntaxError(`select[${'('.repeat(100)}ib${')'.repeat(100)}]`).message, /nested more than 64 levels/);
  assert.match(syntaxError('x'.repeat(5000)).message, /longer than 4096 characters/);
});

test('parse(format(x)) equals x for any requirement (property)', () => {
  fc.assert(
    fc.property(fc.oneof(arbSimpleResReq, arbCompoundResReq), (r) => {
      const text = formatResReq(r);
      const back = parseResReq(text);
      assert.deepStrictEqual(back, r, text);
      assert.equal(formatResReq(back), text); // format(parse(s)) is stable
    }),
    { numRuns: 2000 },
  );
});

test('unknown resource names are errors when cross-checked against resources.yaml', () => {
  const resources = new Map<string, ResourceRef>([
    ['ib', { type: 'boolean' }],
    ['mem', { type: 'numeric' }],
    ['license_foam', { type: 'numeric' }],
    ['rack', { type: 'string' }],
  ]);
  assert.deepEqual(
    checkResReqResources(
      parseResReq('select[ib && mem>4 && type==X86_64] rusage[license_foam=1] same[rack] order[-slots]'),
      resources,
    ),
    [],
  );
  const problems = checkResReqResources(
    parseResReq('select[infiniband && mem] rusage[license_fom=1, rack=2] same[racks] order[speed]'),
    resources,
  );
  assert.deepEqual(
    problems.map((p) => p.message),
    [
      'select[...] names resource "infiniband", which is not defined in resources.yaml',
      'select[...] uses "mem" alone, but it is a numeric resource: compare it, e.g. mem>0',
      'rusage[...] names resource "license_fom", which is not defined in resources.yaml',
      'rusage[...] reserves "rack", but only numeric resources can be reserved (it is string)',
      'same[...] names resource "racks", which is not defined in resources.yaml',
      'order[...] names resource "speed", which is not defined in resources.yaml',
    ],
  );
  assert.deepEqual(
    checkResReqResources(parseResReq('select[ib==1]'), resources).map((p) => p.message),
    ['select[...] compares "ib", but it is a boolean resource: write ib or !ib'],
  );
});
