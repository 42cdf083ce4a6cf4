import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger, parseLogLevel } from './log.js';

function capture() {
  const lines: string[] = [];
  return { lines, sink: { write: (l: string) => void lines.push(l) } };
}

test('json logs are one object a line with the fixed fields and the message fields', () => {
  const { lines, sink } = capture();
  const log = createLogger({ component: 'raft', node: 2 }, { sink, format: 'json', level: 'info', now: () => 0 });
  log.child({ term: 7 }).info('became leader', { commit: 12 });
  log.debug('hidden');
  assert.equal(lines.length, 1);
  const obj = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
  assert.deepEqual(obj, {
    time: '1970-01-01T00:00:00.000Z',
    level: 'info',
    msg: 'became leader',
    component: 'raft',
    node: 2,
    term: 7,
    commit: 12,
  });
});

test('pretty logs are readable and honour colour only when asked', () => {
  const { lines, sink } = capture();
  createLogger({ node: 1 }, { sink, format: 'pretty', color: false, now: () => 0 }).warn('slow fsync', { ms: 120 });
  assert.equal(lines[0], '00:00:00.000 WARN  slow fsync  node=1 ms=120\n');
});

test('an unknown log level is an error naming the choices', () => {
  assert.throws(() => parseLogLevel('verbose', 'info'), /debug, info, warn, error/);
  assert.equal(parseLogLevel(undefined, 'warn'), 'warn');
});
