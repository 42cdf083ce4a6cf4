import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DataDirLockedError } from './errors.js';
import { DataDirLock, LOCK_FILE_NAME } from './lock.js';

function withDir(fn: (dir: string) => Promise<void>): () => Promise<void> {
  return async () => {
    const dir = mkdtempSync(join(tmpdir(), 'xce-lock-'));
    try {
      await fn(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}

test(
  'the lock file names its owner, refuses a second holder, and is removed on release',
  withDir(async (dir) => {
    const lock = await DataDirLock.acquire(dir);
    const owner = JSON.parse(readFileSync(join(dir, LOCK_FILE_NAME), 'utf8')) as { pid: number; host: string };
    assert.equal(owner.pid, process.pid);
    assert.equal(owner.host, hostname());
    await assert.rejects(
      DataDirLock.acquire(dir),
      (e) => e instanceof DataDirLockedError && /stop the other one/.test(e.message),
    );
    await lock.release();
    assert.equal(existsSync(join(dir, LOCK_FILE_NAME)), false);
    await (await DataDirLock.acquire(dir)).release();
  }),
);

test(
  'a live pid whose start time differs (a recycled pid) is a stale lock',
  withDir(async (dir) => {
    writeFileSync(
      join(dir, LOCK_FILE_NAME),
      JSON.stringify({ pid: process.pid, startTicks: -1, host: hostname(), since: 'x' }),
    );
    const why: string[] = [];
    const lock = await DataDirLock.acquire(dir, (w) => why.push(w));
    assert.match(why[0]!, /recycled pid/);
    await lock.release();
  }),
);

/** Lock files found in the directory that acquire must respect: what it says why. */
const RESPECTED: Array<{ name: string; lockFile: string; why: RegExp }> = [
  {
    name: 'a lock held on another host is never broken from here',
    lockFile: JSON.stringify({ pid: 1, startTicks: null, host: 'elsewhere.example', since: 'x' }),
    why: /another host/,
  },
  { name: 'a fresh unreadable lock (its owner still writing it) is respected', lockFile: '', why: /being written/ },
];

for (const c of RESPECTED)
  test(
    c.name,
    withDir(async (dir) => {
      writeFileSync(join(dir, LOCK_FILE_NAME), c.lockFile);
      await assert.rejects(DataDirLock.acquire(dir), (e) => e instanceof DataDirLockedError && c.why.test(e.message));
    }),
  );

test(
  'release does not remove a lock that another process took over',
  withDir(async (dir) => {
    const lock = await DataDirLock.acquire(dir);
    writeFileSync(
      join(dir, LOCK_FILE_NAME),
      JSON.stringify({ pid: 1, startTicks: null, host: hostname(), since: 'y' }),
    );
    await lock.release();
    assert.equal(existsSync(join(dir, LOCK_FILE_NAME)), true);
  }),
);
