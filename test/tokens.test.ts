// Issue 19 with real processes: short-lived access tokens (xce.yaml token_lifetime, here 3 s) and
// the refresh path. An expired token is refused with a clear error; `auth.refresh` with the refresh
// token of the login gives a new access token that works; a refresh token never opens a request and
// an access token never refreshes; xcecli renews its stored token on its own (and with
// `login --refresh`); a refresh token revoked with `xceadmin token revoke` is refused by every
// controller. (A role change taking effect at once for a token already issued: test/api.test.ts.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { TestCluster, until } from '../harness/cluster.js';
import { ApiError, XceClient } from '../cli/client.js';
import { tokenTimes } from '../cli/token-refresh.js';
import type { LoginResult } from '../api/responses.js';
import { cliHome, runCli } from '../testing/e2e.js';

const LIFETIME_S = 3;
let cluster: TestCluster;

before(async () => {
  cluster = await TestCluster.start({
    controllers: 3,
    edit: { 'xce.yaml': (t) => t.replace('token_lifetime: 1h', `token_lifetime: ${LIFETIME_S}s`) },
  });
});

after(async () => {
  await cluster?.stop();
});

/** A client that does not renew its token on its own (refreshToken unset), of `controllers`. */
function plainClient(controllers = cluster.addresses()): XceClient {
  return new XceClient({ controllers, tls: cluster.dialTls(), callDeadline_ms: 20_000 });
}

/** The error `p` fails with (it must fail). */
async function failure(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    return err;
  }
  assert.fail('the call was expected to fail');
}

/** Waits (bounded) until `token` has expired by its own `exp`, plus a second of slack for clocks. */
async function expired(token: string): Promise<void> {
  const t = tokenTimes(token);
  assert.ok(t !== null, 'the token carries iat and exp');
  await until('the token to expire', () => Date.now() > t.expiresAt_ms + 1_000 || undefined, 20_000, 100);
}

test('an expired access token is refused with a clear error; auth.refresh gives a new one that works', async () => {
  const c = plainClient();
  try {
    const login = (await c.call('login', { user: 'alice', password: 'alice-dev' })) as LoginResult;
    assert.equal(login.expiresIn_s, LIFETIME_S);
    assert.ok(login.refreshToken !== undefined && login.refreshExpiresIn_s === 7 * 86_400);
    c.token = login.token;
    await c.call('apps.list', {});
    await expired(login.token);
    const e = await failure(c.call('apps.list', {}));
    assert.equal(e.code, 'unauthenticated');
    assert.match(e.message, /^token expired: log in again with `xcecli login`/);

    const renewed = (await c.call('auth.refresh', { refreshToken: login.refreshToken })) as LoginResult;
    assert.equal(renewed.user, 'alice');
    assert.equal(renewed.expiresIn_s, LIFETIME_S);
    assert.notEqual(renewed.token, login.token);
    c.token = renewed.token;
    await c.call('apps.list', {});

    // Each token for its own use only.
    const asRefresh = await failure(c.call('auth.refresh', { refreshToken: renewed.token }));
    assert.match(asRefresh.message, /this is an access token, not a refresh token/);
    c.token = login.refreshToken;
    const asAccess = await failure(c.call('apps.list', {}));
    assert.match(asAccess.message, /this is a refresh token: it only gets new access tokens/);
  } finally {
    c.close();
  }
});

test('the client library renews its token on its own once it is near expiry', async () => {
  const c = plainClient();
  try {
    await c.loginResult('alice', 'alice-dev');
    const first = c.token!;
    await expired(first);
    // Past expiry (so within the margin): renewed before the call, which succeeds.
    await c.call('apps.list', {});
    assert.notEqual(c.token, first);
  } finally {
    c.close();
  }
});

test('xcecli stores both tokens at login and renews the access token on its own, and with login --refresh', async () => {
  const home = cliHome('tokens');
  const login = runCli(cluster, home, 'xcecli', ['login', '-u', 'alice', '--password-stdin', '--json'], 'alice-dev\n');
  assert.equal(login.code, 0, login.err);
  const out = JSON.parse(login.out) as { tokenFile: string; refreshTokenFile: string; expiresIn_s: number };
  assert.equal(out.expiresIn_s, LIFETIME_S);
  const stored = readFileSync(out.tokenFile, 'utf8').trim();
  assert.ok(readFileSync(out.refreshTokenFile, 'utf8').trim().length > 0);
  await expired(stored);
  const list = runCli(cluster, home, 'xcecli', ['apps', 'list']);
  assert.equal(list.code, 0, list.err);
  const renewed = readFileSync(out.tokenFile, 'utf8').trim();
  assert.notEqual(renewed, stored, 'the renewed token is stored');
  const again = runCli(cluster, home, 'xcecli', ['login', '--refresh', '--json']);
  assert.equal(again.code, 0, again.err);
  assert.notEqual(readFileSync(out.tokenFile, 'utf8').trim(), renewed);
  assert.ok((JSON.parse(again.out) as { expiresAt_ms: number }).expiresAt_ms > Date.now());
});

test('a revoked refresh token is refused by every controller, and the CLI holding it says to log in again', async () => {
  const admin = plainClient();
  const c = plainClient();
  try {
    // The admin's own client renews its 3 s token on its own through the test.
    await admin.loginResult('admin', 'admin-dev');
    const login = await c.loginResult('alice', 'alice-dev');
    const r = await admin.call('token.revoke', { token: login.refreshToken! });
    assert.ok(r.revokedUntil_ms > Date.now() + 86_400_000, 'held until the refresh token expires');
    for (const address of cluster.addresses()) {
      const one = plainClient([address]);
      try {
        await until(
          `${address} to refuse the revoked refresh token`,
          async () => {
            const e = await failure(one.call('auth.refresh', { refreshToken: login.refreshToken! }));
            return /this refresh token was revoked by an administrator: log in again/.test(e.message) || undefined;
          },
          10_000,
          100,
        );
      } finally {
        one.close();
      }
    }
    // The CLI with the revoked refresh token: its token expires and the renewal is refused, saying why.
    const home = cliHome('tokens-revoked');
    const cli = runCli(cluster, home, 'xcecli', ['login', '-u', 'bob', '--password-stdin', '--json'], 'bob-dev\n');
    assert.equal(cli.code, 0, cli.err);
    const files = JSON.parse(cli.out) as { tokenFile: string; refreshTokenFile: string };
    const refresh = readFileSync(files.refreshTokenFile, 'utf8').trim();
    await admin.call('token.revoke', { token: refresh });
    await expired(readFileSync(files.tokenFile, 'utf8').trim());
    const refused = runCli(cluster, home, 'xcecli', ['apps', 'list']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.err, /this refresh token was revoked by an administrator: log in again with `xcecli login`/);
  } finally {
    admin.close();
    c.close();
  }
});
