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

test(
  'a lock held on another host is never broken from here',
  withDir(async (dir) => {
    writeFileSync(
      join(dir, LOCK_FILE_NAME),
      JSON.stringify({ pid: 1, startTicks: null, host: 'elsewhere.example', since: 'x' }),
    );
    await assert.rejects(
      DataDirLock.acquire(dir),
      (e) => e instanceof DataDirLockedError && /another host/.test(e.message),
    );
  }),
);

test(
  'a fresh unreadable lock (its owner still writing it) is respected',
  withDir(async (dir) => {
    writeFileSync(join(dir, LOCK_FILE_NAME), '');
    await assert.rejects(
      DataDirLock.acquire(dir),
      (e) => e instanceof DataDirLockedError && /being written/.test(e.message),
    );
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
