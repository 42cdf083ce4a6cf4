// The bench writer on a small synthetic result: the JSON it writes is well-formed, and every SVG is
// a well-formed document with the figures in it. (CI's bench smoke runs `npm run bench -- --quick`
// itself; this keeps `npm test` short.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { MalformedResultError, validateResult, writeResults, type BenchResult } from './result.js';
import { niceTicks } from './svg.js';

const synthetic: BenchResult = {
  version: 1,
  date: '2026-12-01T01:00:00.000Z',
  quick: true,
  machine: {
    cpuModel: 'Test CPU <fast & "cheap">',
    cores: 2,
    node: 'v20.20.2',
    platform: 'linux',
    memory_bytes: 8 * 2 ** 30,
    fsyncPerSecond: 1234.5,
  },
  micro: [
    {
      name: 'raft',
      command: 'node dist/benchmarks/raft.bench.js',
      seconds: 3.2,
      exitCode: 0,
      output: ['3 nodes, batch 1 | 2.3 µs'],
    },
  ],
  load: [
    { clients: 1, submits: 500, seconds: 2, perSecond: 250, p50_ms: 3.9, p99_ms: 8.1, errors: 0 },
    { clients: 16, submits: 4000, seconds: 2, perSecond: 2000, p50_ms: 7.5, p99_ms: 20.4, errors: 0 },
  ],
  failover_ms: [310, 280, 450, 390],
  wal: [
    { appenders: 1, perSecond: 1100 },
    { appenders: 16, perSecond: 9000 },
    { appenders: 256, perSecond: 60000 },
  ],
  seconds: 95,
};

/** A small XML well-formedness check: tags balance, attributes are quoted, no stray `<` or `&`. */
function assertWellFormedSvg(svg: string, name: string): void {
  assert.ok(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"'), `${name} starts with an svg element`);
  const stack: string[] = [];
  const tag = /<(\/?)([a-zA-Z]+)((?:\s+[a-zA-Z][a-zA-Z0-9:-]*="[^"<]*")*)\s*(\/?)>/g;
  let at = 0;
  for (let m = tag.exec(svg); m !== null; m = tag.exec(svg)) {
    const text = svg.slice(at, m.index);
    assert.ok(
      !/[<>]/.test(text) && !/&(?!amp;|lt;|gt;|quot;)/.test(text),
      `${name}: stray markup in text ${JSON.stringify(text.slice(0, 60))}`,
    );
    at = m.index + m[0].length;
    if (m[1] === '/') assert.equal(stack.pop(), m[2], `${name}: </${m[2]}> closes the open element`);
    else if (m[4] !== '/') stack.push(m[2]!);
  }
  assert.equal(svg.slice(at).trim(), '', `${name}: nothing after the root element`);
  assert.deepEqual(stack, [], `${name}: every element is closed`);
  assert.ok(!/NaN|Infinity|undefined/.test(svg), `${name}: no NaN, Infinity or undefined`);
}

test('the writer puts a well-formed JSON result and four well-formed SVG charts side by side', () => {
  const dir = mkdtempSync(join(tmpdir(), 'xce-bench-render-'));
  try {
    const paths = writeResults(dir, synthetic);
    assert.deepEqual(paths.map((p) => basename(p)).sort(), [
      'bench-2026-12-01T01-00-00Z.json',
      'failover.svg',
      'latest.json',
      'submit-latency.svg',
      'submit-throughput.svg',
      'wal-group-commit.svg',
    ]);
    const back = validateResult(JSON.parse(readFileSync(join(dir, 'latest.json'), 'utf8')));
    assert.deepEqual(back, synthetic);
    for (const p of paths.filter((x) => x.endsWith('.svg'))) assertWellFormedSvg(readFileSync(p, 'utf8'), basename(p));
    const wal = readFileSync(join(dir, 'wal-group-commit.svg'), 'utf8');
    assert.match(wal, /raw 300 B \+ fdatasync: 1235\/s/, 'the raw fsync rate is drawn as a reference');
    assert.match(readFileSync(join(dir, 'failover.svg'), 'utf8'), /n = 4/);
    assert.match(readFileSync(join(dir, 'submit-throughput.svg'), 'utf8'), /Test CPU|2 cores/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a malformed result is refused with the field named', () => {
  assert.throws(() => validateResult({ ...synthetic, load: [] }), MalformedResultError);
  assert.throws(
    () => validateResult({ ...synthetic, machine: { ...synthetic.machine, fsyncPerSecond: NaN } }),
    /machine\.fsyncPerSecond/,
  );
  assert.throws(
    () => validateResult({ ...synthetic, load: [{ ...synthetic.load[0]!, p99_ms: null }] }),
    /load\[0\]\.p99_ms/,
  );
  assert.throws(() => validateResult({ ...synthetic, wal: [{ appenders: 1 }] }), /wal\[0\]/);
});

test('axis ticks are round numbers that cover the data', () => {
  assert.deepEqual(niceTicks(9_000, 5), [0, 2000, 4000, 6000, 8000, 10000]);
  assert.deepEqual(niceTicks(0.9, 3), [0, 0.5, 1]);
});
