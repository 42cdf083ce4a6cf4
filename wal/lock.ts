// An exclusive lock on a data directory, so two controllers never write one log.
//
// Node.js has no flock/fcntl, so the lock is a file created with O_CREAT|O_EXCL holding the owner's
// pid, its start time (from /proc, so a recycled pid is not mistaken for the owner) and host name.
// A lock whose owner is gone (SIGKILL, power loss) is stale and is broken, under a second O_EXCL
// file (`LOCK.break`) so that two processes breaking one stale lock cannot both end up owning it.

import { constants, promises as fsp, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { DataDirLockedError } from './errors.js';
import { fsyncDir } from './fsync.js';
import { LOCK_UNPARSABLE_STALE_MS } from './limits.js';

export const LOCK_FILE_NAME = 'LOCK';

interface LockOwner {
  readonly pid: number;
  /** Process start time in clock ticks since boot (/proc/<pid>/stat field 22), or null off Linux. */
  readonly startTicks: number | null;
  readonly host: string;
  readonly since: string;
}

/** Start time of a live process, or null when /proc cannot tell (not Linux) , or 'dead'. */
function processStartTicks(pid: number): number | null | 'dead' {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may contain spaces: split after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const state = rest[0];
    if (state === 'Z' || state === 'X') return 'dead'; // a zombie holds no file
    const ticks = Number(rest[19]); // field 22 overall = index 19 after "pid (comm)"
    return Number.isFinite(ticks) ? ticks : null;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      return processExists(pid) ? null : 'dead';
    }
    return processExists(pid) ? null : 'dead';
  }
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
}

type Verdict = { readonly stale: true; readonly why: string } | { readonly stale: false; readonly why: string };

async function judge(path: string): Promise<Verdict | 'gone'> {
  let text: string;
  let mtimeMs: number;
  try {
    text = await fsp.readFile(path, 'utf8');
    mtimeMs = (await fsp.stat(path)).mtimeMs;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw e;
  }
  let owner: LockOwner;
  try {
    owner = JSON.parse(text) as LockOwner;
    if (typeof owner.pid !== 'number') throw new Error('no pid');
  } catch {
    // The owner may be between create and write; give it time before presuming it dead.
    const age = Date.now() - mtimeMs;
    return age > LOCK_UNPARSABLE_STALE_MS
      ? { stale: true, why: `unreadable lock file, ${Math.round(age / 1000)} s old` }
      : { stale: false, why: `a lock file being written right now (unreadable, ${Math.round(age)} ms old)` };
  }
  if (owner.host !== hostname()) {
    return {
      stale: false,
      why: `pid ${owner.pid} on host ${owner.host} (another host: its liveness cannot be checked from here)`,
    };
  }
  const now = processStartTicks(owner.pid);
  if (now === 'dead') return { stale: true, why: `pid ${owner.pid} is no longer running` };
  if (owner.startTicks !== null && now !== null && now !== owner.startTicks) {
    return { stale: true, why: `pid ${owner.pid} now belongs to another process (recycled pid)` };
  }
  return { stale: false, why: `pid ${owner.pid} on ${owner.host}, since ${owner.since}` };
}

/** A held lock; `release()` removes it. */
export class DataDirLock {
  private released = false;
  private constructor(
    readonly path: string,
    private readonly content: string,
  ) {}

  /**
   * Takes the lock on `dir`, breaking a stale one (reported through `onStale`). Throws
   * DataDirLockedError naming the live owner when another process holds it.
   */
  static async acquire(dir: string, onStale?: (why: string) => void): Promise<DataDirLock> {
    const path = join(dir, LOCK_FILE_NAME);
    const startTicks = processStartTicks(process.pid);
    const owner: LockOwner = {
      pid: process.pid,
      startTicks: typeof startTicks === 'number' ? startTicks : null,
      host: hostname(),
      since: new Date().toISOString(),
    };
    const content = JSON.stringify(owner) + '\n';
    // Bounded: one attempt, one stale-lock break, one more attempt.
    for (let attempt = 0; attempt < 3; attempt++) {
      if (await tryCreate(path, content)) {
        await fsyncDir(dir);
        return new DataDirLock(path, content);
      }
      const v = await judge(path);
      if (v === 'gone') continue;
      if (!v.stale) {
        throw new DataDirLockedError(
          `data directory ${dir} is locked by ${v.why}. Two controllers must never share a data directory: ` +
            `stop the other one, or give this one its own directory. If you are certain no process uses it, remove ${path}.`,
        );
      }
      await breakStale(dir, path, v.why);
      onStale?.(v.why);
    }
    throw new DataDirLockedError(
      `data directory ${dir}: could not take ${path} after breaking a stale lock (another process is racing for it); retry.`,
    );
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    try {
      if ((await fsp.readFile(this.path, 'utf8')) === this.content) await fsp.unlink(this.path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }
}

async function tryCreate(path: string, content: string): Promise<boolean> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
  try {
    await fh.writeFile(content);
    await fh.sync();
  } finally {
    await fh.close();
  }
  return true;
}

/** Removes a stale lock while holding LOCK.break, re-judging it under that guard. */
async function breakStale(dir: string, path: string, why: string): Promise<void> {
  const guard = join(dir, `${LOCK_FILE_NAME}.break`);
  const guardContent = JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() }) + '\n';
  if (!(await tryCreate(guard, guardContent))) {
    const g = await judge(guard);
    if (g === 'gone' || g.stale) {
      // Its breaker died mid-break (or finished): clear the guard and let the caller try again.
      if (g !== 'gone') await fsp.unlink(guard).catch(() => undefined);
      return;
    }
    throw new DataDirLockedError(
      `data directory ${dir}: another process is breaking the stale lock (${why}) right now; retry.`,
    );
  }
  try {
    const again = await judge(path);
    if (again !== 'gone' && again.stale) await fsp.unlink(path).catch(() => undefined);
  } finally {
    await fsp.unlink(guard).catch(() => undefined);
  }
}
