import { test } from 'node:test';
import assert from 'node:assert/strict';
import { API_FRAME_BYTES_MAX, RequestError, parseRequest } from './protocol.js';

function rejects(frame: string, code: string, pattern: RegExp, id = -1): void {
  assert.throws(
    () => parseRequest(frame),
    (e: unknown) => e instanceof RequestError && e.code === code && pattern.test(e.message) && e.id === id,
    `expected ${code} ${pattern} for ${frame.slice(0, 80)}`,
  );
}

const session = { client: 'c-12345678', seq: 1 };

test('a well-formed submit parses with its job spec', () => {
  const r = parseRequest(
    JSON.stringify({
      id: 3,
      op: 'jobs.submit',
      token: 't',
      session,
      args: { job: { app: 'openfoam', tasks: 64, command: ['./run.sh'] } },
    }),
  );
  assert.equal(r.op, 'jobs.submit');
  if (r.op === 'jobs.submit') assert.equal(r.args.job.tasks, 64);
});

test('malformed JSON is a bad frame', () => rejects('{"id":1,', 'bad-frame', /not JSON/));

test('an unknown operation is named, with the known ones', () =>
  rejects('{"id":4,"op":"jobs.frobnicate"}', 'unknown-op', /"jobs\.frobnicate".*jobs\.submit/, 4));

test('a wrong type names the field path', () =>
  rejects(
    JSON.stringify({ id: 5, op: 'jobs.submit', session, args: { job: { tasks: 'many', command: ['x'] } } }),
    'bad-request',
    /args\.job\.tasks/,
    5,
  ));

test('an unknown field is refused rather than ignored', () =>
  rejects(JSON.stringify({ id: 6, op: 'jobs.show', args: { id: 1, verbose: true } }), 'bad-request', /verbose/, 6));

test('a write without a session is refused', () =>
  rejects(JSON.stringify({ id: 7, op: 'jobs.kill', args: { id: 1 } }), 'bad-request', /session/, 7));

test('an oversized frame is refused before parsing', () =>
  rejects('x'.repeat(API_FRAME_BYTES_MAX + 1), 'bad-frame', /exceeds the limit/));

test('a frame without an id is still answered with the reason', () =>
  rejects('{"op":"apps.list"}', 'bad-request', /id/));
