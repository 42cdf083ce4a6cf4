import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  checkSession,
  expireSessions,
  recordSession,
  SESSION_TTL_MS,
  SESSIONS_MAX,
  type SessionTable,
} from './sessions.js';

const OK = { kind: 'submitted', jobId: 1 } as const;

test('the session table is bounded: beyond SESSIONS_MAX the least recently used session goes first', () => {
  const t: SessionTable = new Map();
  for (let i = 0; i <= SESSIONS_MAX; i++) recordSession(t, `c${i}`, 1, i, OK);
  assert.equal(t.size, SESSIONS_MAX);
  assert.equal(t.has('c0'), false);
  assert.equal(t.has('c1'), true);
  // touching c1 makes it the most recent: c2 is evicted next
  recordSession(t, 'c1', 2, SESSIONS_MAX + 1, OK);
  recordSession(t, 'new', 1, SESSIONS_MAX + 2, OK);
  assert.equal(t.has('c1'), true);
  assert.equal(t.has('c2'), false);
});

test('a session expires SESSION_TTL_MS after its last request, by log time; a later request keeps it', () => {
  const t: SessionTable = new Map();
  recordSession(t, 'a', 1, 0, OK);
  recordSession(t, 'b', 1, 10, OK);
  expireSessions(t, SESSION_TTL_MS);
  assert.deepEqual([...t.keys()], ['a', 'b']);
  recordSession(t, 'a', 2, 20, OK);
  expireSessions(t, SESSION_TTL_MS + 15);
  assert.deepEqual([...t.keys()], ['a']);
  expireSessions(t, SESSION_TTL_MS + 21);
  assert.deepEqual([...t.keys()], []);
});

test('a retry returns the first result; an older sequence is refused; a newer one is new', () => {
  const t: SessionTable = new Map();
  recordSession(t, 'a', 5, 0, OK);
  assert.deepEqual(checkSession(t, 'a', 5), { kind: 'duplicate', result: OK });
  assert.equal(checkSession(t, 'a', 4).kind, 'stale');
  assert.equal(checkSession(t, 'a', 6).kind, 'new');
  assert.equal(checkSession(t, 'zzz', 9).kind, 'new');
});
