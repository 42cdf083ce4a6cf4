import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pbkdf2 } from 'node:crypto';
import { threadId } from 'node:worker_threads';
import { AuthError, hashPassword } from './auth.js';
import { PasswordPool, PasswordPoolBusyError } from './password-pool.js';

/** Runs `body` with a pool of `threads` threads and a queue of `queued`, and closes the pool after. */
async function withPool(threads: number, queued: number, body: (pool: PasswordPool) => Promise<void>): Promise<void> {
  const pool = new PasswordPool(threads, queued);
  try {
    await body(pool);
  } finally {
    await pool.close();
  }
}

test("passwords are verified on the pool's own worker thread", () =>
  withPool(1, 4, async (pool) => {
    const h = await hashPassword('pw', 1024);
    assert.equal(await pool.verify('pw', h), true);
    assert.equal(await pool.verify('nope', h), false);
    const ids = pool.threadIds();
    assert.equal(ids.length, 1);
    assert.notEqual(ids[0], threadId, 'not the main thread');
  }));

test("a verification is not queued behind a saturated libuv thread pool (where the WAL's fdatasync runs)", () =>
  withPool(1, 4, async (pool) => {
    const h = await hashPassword('pw', 1024);
    await pool.verify('pw', h); // the thread is up
    // Fill every libuv thread (UV_THREADPOOL_SIZE, 4 by default) with seconds of work, as 300 logins did.
    const size = Number(process.env['UV_THREADPOOL_SIZE'] ?? 4);
    const order: string[] = [];
    const blockers = Array.from(
      { length: size },
      (_, i) =>
        new Promise<void>((resolve, reject) =>
          pbkdf2(`b${i}`, 'salt', 400_000, 64, 'sha512', (err) =>
            err ? reject(err) : (order.push('libuv'), resolve()),
          ),
        ),
    );
    const check = pool.verify('pw', h).then((ok) => (order.push('password'), ok));
    assert.equal(await check, true);
    await Promise.all(blockers);
    assert.equal(order[0], 'password', `completion order: ${order.join(', ')}`);
  }));

test('past its bounded queue the pool refuses at once', () =>
  withPool(1, 2, async (pool) => {
    const h = await hashPassword('pw', 16384);
    const running = [pool.verify('a', h), pool.verify('b', h), pool.verify('c', h)]; // 1 running + 2 queued
    await assert.rejects(pool.verify('d', h), PasswordPoolBusyError);
    assert.deepEqual(await Promise.all(running), [false, false, false]);
  }));

test('a malformed stored hash is an AuthError bad-hash from the thread', () =>
  withPool(1, 2, async (pool) => {
    await assert.rejects(pool.verify('x', 'md5$abc'), (e: unknown) => e instanceof AuthError && e.code === 'bad-hash');
    assert.equal(await pool.verify('x', await hashPassword('x', 1024)), true, 'the thread goes on serving');
  }));

test('the pool holds 1 or 2 threads', () => {
  assert.throws(() => new PasswordPool(0), RangeError);
  assert.throws(() => new PasswordPool(3), RangeError);
});
