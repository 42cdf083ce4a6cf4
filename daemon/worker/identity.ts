// Execution identity (`direct` mode: the submitter). A root worker resolves the user through NSS
// (`getent passwd`, so LDAP/SSSD users work) or, without getent, /etc/passwd, and runs every layer
// as that uid/gid with the user's HOME. A worker that is not root runs jobs as itself (the dev
// default) and says so once at start.

import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import type { ExecIdentity } from './env.js';
import { LaunchError } from './launch-error.js';

/** A name lookup slower than this fails the launch rather than hanging the worker. */
export const USER_LOOKUP_TIMEOUT_MS = 5_000;
/** A user found is remembered this long (a burst of one user's jobs costs one lookup); a user not found is not. */
export const USER_CACHE_MS = 60_000;
export const USER_CACHE_ENTRIES_MAX = 4096;
const PASSWD_BYTES_MAX = 64 * 1024 * 1024;
/** POSIX-portable user names plus what common systems allow (dots, a trailing $ for machine accounts). */
const USER_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,255}\$?$/;

export interface PasswdEntry {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

/** One `name:x:uid:gid:gecos:home:shell` line; null when it is not one. */
export function parsePasswdLine(line: string): PasswdEntry | null {
  const f = line.split(':');
  if (f.length < 7) return null;
  const uid = Number(f[2]);
  const gid = Number(f[3]);
  if (!Number.isSafeInteger(uid) || uid < 0 || !Number.isSafeInteger(gid) || gid < 0 || f[2] === '' || f[3] === '')
    return null;
  return { name: f[0] as string, uid, gid, home: f[5] as string };
}

export interface UserLookupOptions {
  /** `getent` to use; null: read `passwdFile` instead. Default `getent` (found on PATH). */
  readonly getent?: string | null;
  readonly passwdFile?: string;
}

const found = new Map<string, { entry: PasswdEntry; until_ms: number }>();

/** Looks a user up by name; null when the user does not exist. Throws LaunchError when the lookup itself fails. */
export async function lookupUser(name: string, opts: UserLookupOptions = {}): Promise<PasswdEntry | null> {
  if (!USER_NAME.test(name)) return null;
  const key = `${opts.getent === undefined ? 'getent' : String(opts.getent)}|${opts.passwdFile ?? ''}|${name}`;
  const hit = found.get(key);
  if (hit !== undefined && hit.until_ms > Date.now()) return hit.entry;
  const entry = await lookupUncached(name, opts);
  found.delete(key);
  if (entry !== null) {
    if (found.size >= USER_CACHE_ENTRIES_MAX) found.delete(found.keys().next().value as string);
    found.set(key, { entry, until_ms: Date.now() + USER_CACHE_MS });
  }
  return entry;
}

async function lookupUncached(name: string, opts: UserLookupOptions): Promise<PasswdEntry | null> {
  const getent = opts.getent === undefined ? 'getent' : opts.getent;
  if (getent !== null) {
    const r = await runGetent(getent, name);
    if (r !== 'no-getent') return r;
  }
  const text = await readFile(opts.passwdFile ?? '/etc/passwd', 'utf8');
  if (text.length > PASSWD_BYTES_MAX)
    throw new LaunchError(`${opts.passwdFile ?? '/etc/passwd'} is larger than ${PASSWD_BYTES_MAX} bytes`);
  for (const line of text.split('\n')) {
    const e = parsePasswdLine(line);
    if (e !== null && e.name === name) return e;
  }
  return null;
}

function runGetent(getent: string, name: string): Promise<PasswdEntry | null | 'no-getent'> {
  return new Promise((resolve, reject) => {
    execFile(
      getent,
      ['passwd', '--', name],
      { timeout: USER_LOOKUP_TIMEOUT_MS, maxBuffer: 64 * 1024 },
      (err, stdout) => {
        if (err === null) {
          const e = parsePasswdLine(stdout.split('\n')[0] ?? '');
          resolve(e !== null && e.name === name ? e : null);
          return;
        }
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return resolve('no-getent');
        // getent exits 2 when the key is not found.
        if ((err as { code?: unknown }).code === 2) return resolve(null);
        if (err.killed)
          return reject(
            new LaunchError(`looking up the execution user ${name} took longer than ${USER_LOOKUP_TIMEOUT_MS} ms`),
          );
        reject(new LaunchError(`looking up the execution user ${name} failed: ${err.message.split('\n')[0]}`));
      },
    );
  });
}

let self: ExecIdentity | null = null;

/** The worker's own identity (jobs run as it when the worker is not root): looked up once (a passwd lookup per job cost 0.2 ms). */
export function selfIdentity(): ExecIdentity {
  if (self !== null) return self;
  const u = userInfo();
  self = { name: u.username, uid: u.uid, gid: u.gid, home: u.homedir, switchUser: false };
  return self;
}

export function workerIsRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/**
 * Who runs the job. Root: the submitter, or LaunchError `execution user bob does not exist on host
 * h1`. Not root: the worker's own user (the caller logs that once at start).
 */
export async function resolveExecIdentity(
  user: string,
  host: string,
  asRoot: boolean,
  opts: UserLookupOptions = {},
): Promise<ExecIdentity> {
  if (!asRoot) return selfIdentity();
  const e = await lookupUser(user, opts);
  if (e === null) throw new LaunchError(`execution user ${user} does not exist on host ${host}`);
  return { name: e.name, uid: e.uid, gid: e.gid, home: e.home === '' ? '/' : e.home, switchUser: true };
}
