import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthError, TokenAuthority, hashPassword, verifyPassword } from './auth.js';

const secret = new TextEncoder().encode('0123456789abcdef0123456789abcdef-test-only');

test('a password verifies against its own scrypt hash and no other', async () => {
  const h = await hashPassword('correct horse', 1024);
  assert.match(h, /^scrypt\$1024\$[^$]+\$[^$]+$/);
  assert.equal(await verifyPassword('correct horse', h), true);
  assert.equal(await verifyPassword('correct hors', h), false);
});

test('a malformed password hash is refused with a message naming the format', async () => {
  await assert.rejects(
    verifyPassword('x', 'md5$abc'),
    (e: unknown) => e instanceof AuthError && e.code === 'bad-hash' && /scrypt\$N\$salt\$key/.test(e.message),
  );
  await assert.rejects(verifyPassword('x', 'scrypt$1000$AA==$AA=='), AuthError);
});

test('a token issued by the cluster verifies and names its user', async () => {
  const ta = new TokenAuthority(secret, 'xce-test', () => 1_700_000_000_000);
  const token = await ta.issue('alice', 3600);
  const claims = await ta.verify(token);
  assert.equal(claims.user, 'alice');
  assert.equal(claims.expiresAt, 1_700_000_000 + 3600);
});

test('an expired, forged, foreign or missing token is refused', async () => {
  let now = 1_700_000_000_000;
  const ta = new TokenAuthority(secret, 'xce-test', () => now);
  const token = await ta.issue('alice', 60);
  now += 61_000;
  await assert.rejects(ta.verify(token), (e: unknown) => e instanceof AuthError && e.code === 'expired-token');
  now = 1_700_000_000_000;
  const [h, p, s] = token.split('.');
  const forgedPayload = Buffer.from(JSON.stringify({ sub: 'admin', iss: 'xce-test', exp: 1_800_000_000 })).toString(
    'base64url',
  );
  await assert.rejects(
    ta.verify(`${h}.${forgedPayload}.${s}`),
    (e: unknown) => e instanceof AuthError && e.code === 'bad-token',
  );
  assert.ok(p);
  const other = new TokenAuthority(
    new TextEncoder().encode('another-cluster-secret-of-32-bytes!!'),
    'xce-test',
    () => now,
  );
  await assert.rejects(other.verify(token), (e: unknown) => e instanceof AuthError && e.code === 'bad-token');
  await assert.rejects(ta.verify(undefined), (e: unknown) => e instanceof AuthError && e.code === 'missing-token');
  await assert.rejects(ta.verify('not.a.jwt'), (e: unknown) => e instanceof AuthError && e.code === 'bad-token');
});

test('a cluster secret shorter than 32 bytes is refused', () => {
  assert.throws(
    () => new TokenAuthority(new Uint8Array(16), 'x'),
    (e: unknown) => e instanceof AuthError && e.code === 'weak-secret',
  );
});
