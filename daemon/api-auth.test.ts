// The API's authentication rules on one node whose Raft is a stand-in (propose = apply at the next
// index): a token lives only as long as its user, `token.issue` bounds its lifetime, and logins
// are rate limited. The password work itself is tested in login-gate.test.ts and password-pool.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiServer } from './api-server.js';
import { hashPassword, TOKEN_TTL_S_MAX, TokenAuthority } from './auth.js';
import { LOGIN_USER_LIMITS } from './login-gate.js';
import { sharedPasswordPool } from './password-pool.js';
import type { ConfigFile } from '../statemachine/facts.js';
import { testClusterFiles } from '../testing/test-cluster.js';
import { StandInNode, standInApi, T0 } from '../testing/api-node.js';

const SECRET = new TextEncoder().encode('api-auth-test-secret-0123456789abcdef');

async function files(users: readonly string[]): Promise<ConfigFile[]> {
  const lines = await Promise.all(
    users.map(async (u) => `  - { name: ${u}, groups: [users], password: "${await hashPassword(`${u}-pw`, 1024)}" }\n`),
  );
  return [
    ...testClusterFiles().filter((f) => f.path !== 'users.yaml'),
    { path: 'users.yaml', text: `users:\n${lines.join('')}` },
  ];
}

async function setup() {
  const initial = await files(['alice', 'bob', 'root']);
  const node = StandInNode.configured(initial);
  const tokens = new TokenAuthority(SECRET, 'testcluster', () => T0);
  const api = standInApi(node, initial, tokens, () => T0);
  let id = 0;
  const call = async (op: string, args: Record<string, unknown>, token?: string) =>
    api.handle(JSON.stringify({ id: ++id, op, ...(token ? { token } : {}), args }));
  return { node, tokens, call };
}

type Answer = Awaited<ReturnType<ApiServer['handle']>>;
function error(r: Answer): { code: string; message: string } {
  assert.equal(r.ok, false, `expected an error, got ${JSON.stringify(r)}`);
  return (r as { error: { code: string; message: string } }).error;
}

test("a deleted user's token is refused at its next request, not when it expires", async () => {
  const { node, tokens, call } = await setup();
  const bob = await tokens.issue('bob');
  assert.equal((await call('jobs.list', {}, bob)).ok, true);
  node.config(await files(['alice', 'root']));
  const e = error(await call('jobs.list', {}, bob));
  assert.equal(e.code, 'unauthenticated');
  assert.match(e.message, /\bbob\b.*users\.yaml/);
  // Another user's token is unaffected, and bob's works again once bob is back.
  assert.equal((await call('jobs.list', {}, await tokens.issue('alice'))).ok, true);
  node.config(await files(['alice', 'bob', 'root']));
  assert.equal((await call('jobs.list', {}, bob)).ok, true);
});

test('token.issue with a lifetime beyond the maximum is a bad request naming the maximum', async () => {
  const { tokens, call } = await setup();
  const root = await tokens.issue('root');
  const e = error(await call('token.issue', { user: 'alice', ttl_s: 1e9 }, root));
  assert.equal(e.code, 'bad-request');
  assert.match(e.message, new RegExp(`${TOKEN_TTL_S_MAX}`));
  const ok = await call('token.issue', { user: 'alice', ttl_s: TOKEN_TTL_S_MAX }, root);
  assert.equal(ok.ok, true, JSON.stringify(ok));
});

test('logins past the per-user limit are refused before their password is looked at, whoever the user is', async () => {
  const { call } = await setup();
  for (let i = 0; i < LOGIN_USER_LIMITS.burst; i++) {
    const e = error(await call('login', { user: 'alice', password: 'wrong' }));
    assert.deepEqual([e.code, e.message], ['unauthenticated', 'user name or password is not correct']);
  }
  // The right password does not get through either: the bucket is empty (no time passes here).
  const limited = error(await call('login', { user: 'alice', password: 'alice-pw' }));
  assert.equal(limited.code, 'rate-limited'); // retryable: the client library waits and tries again
  assert.match(limited.message, /too many login attempts for user alice; retry in \d+ s/);
  // A name that does not exist is limited the same way, so the limit does not tell names apart.
  for (let i = 0; i < LOGIN_USER_LIMITS.burst; i++)
    assert.equal(error(await call('login', { user: 'nosuchuser', password: 'x' })).code, 'unauthenticated');
  assert.match(
    error(await call('login', { user: 'nosuchuser', password: 'x' })).message,
    /too many login attempts for user nosuchuser/,
  );
  // Other users are not affected.
  const bob = await call('login', { user: 'bob', password: 'bob-pw' });
  assert.equal(bob.ok, true, JSON.stringify(bob));
});

test('a login for a user that does not exist costs one password verification, as a wrong password does', async () => {
  const { call } = await setup();
  const pool = sharedPasswordPool();
  const before = pool.verified;
  const unknown = error(await call('login', { user: 'mallory', password: 'x' }));
  assert.equal(pool.verified - before, 1, 'verified against the dummy hash');
  const wrong = error(await call('login', { user: 'alice', password: 'x' }));
  assert.equal(pool.verified - before, 2);
  assert.deepEqual(unknown, wrong);
});
