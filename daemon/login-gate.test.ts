import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthError, DUMMY_PASSWORD_HASH, hashPassword, verifyPassword } from './auth.js';
import { LoginGate, LoginRateLimitedError, TokenBuckets } from './login-gate.js';
import { PasswordPoolBusyError, type PasswordVerifier } from './password-pool.js';

const ALICE_HASH = 'scrypt$1024$YWxpY2Utc2FsdA==$' + Buffer.alloc(32, 7).toString('base64');
const USERS = new Map([['alice', { passwordHash: ALICE_HASH }]]);

/** Records every verification; answers `true` only for the password `right`. */
class RecordingVerifier implements PasswordVerifier {
  readonly calls: string[] = [];
  async verify(password: string, stored: string): Promise<boolean> {
    this.calls.push(stored);
    return password === 'right';
  }
}

async function refusal(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  assert.fail('expected a refusal');
}

test('an unknown user and a wrong password take the same path: one verification each, the same answer', async () => {
  const v = new RecordingVerifier();
  const gate = new LoginGate(v, () => 0);
  const unknown = await refusal(gate.check(USERS, 'mallory', 'right', null));
  const wrong = await refusal(gate.check(USERS, 'alice', 'wrong', null));
  assert.deepEqual(v.calls, [DUMMY_PASSWORD_HASH, ALICE_HASH], 'the unknown user is verified against the dummy hash');
  for (const e of [unknown, wrong]) assert.ok(e instanceof AuthError && e.code === 'bad-credentials');
  assert.equal(unknown.message, wrong.message);
  await gate.check(USERS, 'alice', 'right', null);
});

test('the dummy hash costs a real scrypt of the default cost and matches no password', async () => {
  assert.match(DUMMY_PASSWORD_HASH, /^scrypt\$16384\$/);
  assert.equal(await verifyPassword('', DUMMY_PASSWORD_HASH), false);
  assert.equal(await verifyPassword('right', DUMMY_PASSWORD_HASH), false);
  // Same work as a user's hash of the default cost: the same N, r, p and key length.
  assert.equal((await hashPassword('x')).split('$')[1], DUMMY_PASSWORD_HASH.split('$')[1]);
});

test('over the per-user limit a login is refused without any password work, and the bucket refills', async () => {
  const v = new RecordingVerifier();
  let now = 1_000_000;
  const gate = new LoginGate(v, () => now, {
    user: { burst: 3, refill_ms: 1000 },
    address: { burst: 100, refill_ms: 1 },
  });
  for (let i = 0; i < 3; i++) await refusal(gate.check(USERS, 'alice', 'wrong', '10.0.0.1'));
  const e = await refusal(gate.check(USERS, 'alice', 'right', '10.0.0.1'));
  assert.ok(e instanceof LoginRateLimitedError);
  assert.equal(e.message, 'too many login attempts for user alice; retry in 1 s');
  assert.equal(v.calls.length, 3, 'a refused attempt costs no scrypt');
  now += 1000;
  await gate.check(USERS, 'alice', 'right', '10.0.0.1');
});

test('over the per-address limit a login is refused whatever the user name', async () => {
  const v = new RecordingVerifier();
  const gate = new LoginGate(v, () => 0, {
    user: { burst: 100, refill_ms: 1 },
    address: { burst: 2, refill_ms: 60_000 },
  });
  await refusal(gate.check(USERS, 'u1', 'x', '192.0.2.7'));
  await refusal(gate.check(USERS, 'u2', 'x', '192.0.2.7'));
  const e = await refusal(gate.check(USERS, 'u3', 'x', '192.0.2.7'));
  assert.ok(e instanceof LoginRateLimitedError);
  assert.match(e.message, /too many login attempts from 192\.0\.2\.7; retry in 60 s/);
  // Another address is not affected.
  await gate.check(USERS, 'alice', 'right', '192.0.2.8');
});

test('a full password queue is a rate limit, not an error', async () => {
  const busy: PasswordVerifier = {
    verify: () => Promise.reject(new PasswordPoolBusyError('32 password checks are already waiting')),
  };
  const e = await refusal(new LoginGate(busy, () => 0).check(USERS, 'alice', 'right', null));
  assert.ok(e instanceof LoginRateLimitedError, String(e));
});

test('the buckets are bounded: the least recently used go first', () => {
  const b = new TokenBuckets({ burst: 1, refill_ms: 1000 }, 3);
  for (const k of ['a', 'b', 'c', 'd']) b.take(k, 0);
  assert.equal(b.size, 3);
  assert.equal(b.wait('a', 0), 0, 'a was forgotten: a full bucket again');
  assert.equal(b.wait('d', 0), 1000);
});

test('a key used again moves to the end of the order; one used on every request stays there', () => {
  const b = new TokenBuckets({ burst: 4, refill_ms: 1000 }, 2);
  b.take('a', 0);
  b.take('b', 0);
  b.take('a', 0); // a is now the most recently used: c pushes b out
  b.take('c', 0);
  assert.equal(b.wait('a', 0), 0);
  assert.equal(b.admit('a', 0), 0, 'a kept its count: 2 of 4 taken, 2 left');
  assert.equal(b.admit('a', 0), 0);
  assert.equal(b.admit('a', 0), 1000, 'a is empty: its bucket was remembered, not a new one');
  // b was forgotten (a full bucket again); taking it forgets c, the least recently used now.
  for (let i = 0; i < 4; i++) assert.equal(b.admit('b', 0), 0);
  assert.equal(b.admit('b', 0), 1000);
  assert.equal(b.admit('c', 0), 0, 'c was forgotten when b came back');
  assert.equal(b.size, 2);
});

test('admit counts like wait then take, and refuses without counting', () => {
  const one = new TokenBuckets({ burst: 2, refill_ms: 1000 });
  const two = new TokenBuckets({ burst: 2, refill_ms: 1000 });
  for (const now of [0, 0, 0, 400, 900, 1500, 1500, 1500, 4000]) {
    const w = two.wait('k', now);
    if (w === 0) two.take('k', now);
    assert.equal(one.admit('k', now), w, `at ${now} ms`);
  }
});
