// The identity switch: how a layer's process is started so that nothing a user chose is seen by a
// process running as root.
//
// The dynamic loader and libc honour LD_PRELOAD, LD_DEBUG_OUTPUT, GCONV_PATH, LOCPATH, MALLOC_* ...
// in any program that root execs (secure-execution mode is only for set-user-ID programs), so a
// root worker must never exec anything with a layer's environment. Two ways to switch:
//
//   setpriv (uid, gid AND supplementary groups): setpriv runs as root, so it gets SWITCH_ENV only:
//     a fixed PATH and the layer's environment as an inert shell script in XCE_LAYER_ENV_<n>
//     (names the loader and libc never read). After the switch, as the user, `/bin/sh` evaluates
//     the script (exports every NAME='value'), unsets the carriers and execs the layer:
//       setpriv --reuid=U --regid=G --init-groups -- /bin/sh -c RESTORE xce-env <layer argv...>
//     (a layer that is a shell program, `/bin/sh -c PROGRAM NAME ARGS...`, runs in that shell:
//       setpriv ... -- /bin/sh -c 'RESTORE; PROGRAM' NAME ARGS...)
//     The values travel in the environment, never in argv: /proc/<pid>/cmdline is readable by
//     every local user, /proc/<pid>/environ only by the process's owner.
//   Node's spawn uid/gid (no setpriv): the child drops to the uid/gid before it execs, so the
//     layer's environment is handed to a process that is already the user's (no supplementary groups).
//
// A layer that runs as uid 0 itself (a worker running jobs as itself as root, or a job of user
// root) never gets the loader's unsecure variables (glibc's unsecvars.h): ROOT_UNSAFE_ENV.

import type { Env, ExecIdentity } from './env.js';
import { FIXED_PATH } from './env.js';
import { LaunchError } from './launch-error.js';
import { ENV_NAME_PATTERN } from '../../model/job-limits.js';

/** Carriers of the layer's environment past setpriv: `XCE_LAYER_ENV_0`, `_1`, ... (XCE_ is reserved: no user sets it). */
export const LAYER_ENV_CARRIER = 'XCE_LAYER_ENV_';
/** Script bytes per carrier; one environment string may not exceed 128 KiB (Linux MAX_ARG_STRLEN). */
export const LAYER_ENV_CARRIER_BYTES_MAX = 96 * 1024;
/** Exit code when the environment cannot be restored after the switch (job-run's WRAPPER_FAILED_EXIT). */
export const SWITCH_FAILED_EXIT = 254;
const LAUNCH_MARK = 'xce-launch: ';
const SHELL = '/bin/sh';

/**
 * Names the loader or libc act on in a program run as root (glibc `unsecvars.h`), ignored by them
 * only in secure-execution mode. Every `LD_` and `MALLOC_` name counts too (ROOT_UNSAFE_ENV_PREFIXES).
 */
export const ROOT_UNSAFE_ENV: ReadonlySet<string> = new Set([
  'GCONV_PATH',
  'GETCONF_DIR',
  'GLIBC_TUNABLES',
  'HOSTALIASES',
  'LOCALDOMAIN',
  'LOCPATH',
  'NIS_PATH',
  'NLSPATH',
  'RESOLV_HOST_CONF',
  'RES_OPTIONS',
  'TMPDIR',
  'TZDIR',
]);
export const ROOT_UNSAFE_ENV_PREFIXES: readonly string[] = ['LD_', 'MALLOC_'];

export function isRootUnsafe(name: string): boolean {
  return ROOT_UNSAFE_ENV.has(name) || ROOT_UNSAFE_ENV_PREFIXES.some((p) => name.startsWith(p));
}

/** How one layer's process is started. */
export interface LayerSpawn {
  readonly file: string;
  readonly args: readonly string[];
  /** The environment of the process the worker execs (root's, when it switches with setpriv). */
  readonly env: Env;
  /** For Node's spawn: the child drops to these before it execs (the switch without setpriv). */
  readonly ids: { readonly uid: number; readonly gid: number } | null;
  /** Names dropped because the layer runs as uid 0 (ROOT_UNSAFE_ENV). */
  readonly dropped: readonly string[];
}

/** `'it'\''s'`: a POSIX shell single-quoted word for any text. */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** The environment as shell script chunks (`export NAME='value'` lines), each under the carrier limit unless one line alone is larger. */
export function envScript(env: Env): string[] {
  const chunks: string[] = [];
  let cur = '';
  for (const [name, value] of Object.entries(env)) {
    // The one env-name rule of the API, apply and the start frame (model/job-limits.ts): the shell exports only these.
    if (!ENV_NAME_PATTERN.test(name))
      throw new LaunchError(`environment variable name ${JSON.stringify(name.slice(0, 64))} is not a shell name`);
    if (name.startsWith(LAYER_ENV_CARRIER)) throw new LaunchError(`environment variable name ${name} is reserved`);
    const line = `export ${name}=${shellQuote(value)}\n`;
    if (cur !== '' && Buffer.byteLength(cur) + Buffer.byteLength(line) > LAYER_ENV_CARRIER_BYTES_MAX) {
      chunks.push(cur);
      cur = '';
    }
    cur += line;
  }
  if (cur !== '') chunks.push(cur);
  return chunks;
}

/**
 * The shell program that, as the user, turns the carriers back into the environment, then execs the
 * layer (`exec "$@"`) or, for a layer that is itself a shell program (`then`), runs it in place.
 */
export function restoreScript(carriers: number, then = 'exec "$@"'): string {
  const names = Array.from({ length: carriers }, (_, i) => `${LAYER_ENV_CARRIER}${i}`);
  const evals = names.map((n) => `eval "$${n}" || fail`).join('; ');
  return (
    `fail() { echo "${LAUNCH_MARK}cannot set the layer's environment after the identity switch" >&2; exit ${SWITCH_FAILED_EXIT}; }; ` +
    (carriers > 0 ? `${evals}; unset ${names.join(' ')}; ` : '') +
    then
  );
}

/**
 * The process to start for a layer run as `identity` with `argv` and the environment `env`.
 * `setpriv`: util-linux setpriv's path, or null to switch with Node's uid/gid.
 */
export function layerSpawn(
  identity: ExecIdentity,
  setpriv: string | null,
  argv: readonly string[],
  env: Env,
): LayerSpawn {
  if (argv.length === 0) throw new LaunchError('a layer has an empty command');
  const dropped: string[] = [];
  let layerEnv = env;
  if (identity.uid === 0) {
    layerEnv = {};
    for (const [name, value] of Object.entries(env)) {
      if (isRootUnsafe(name)) dropped.push(name);
      else layerEnv[name] = value;
    }
  }
  if (!identity.switchUser) return { file: argv[0] as string, args: argv.slice(1), env: layerEnv, ids: null, dropped };
  if (setpriv === null)
    return {
      file: argv[0] as string,
      args: argv.slice(1),
      env: layerEnv,
      ids: { uid: identity.uid, gid: identity.gid },
      dropped,
    };
  const chunks = envScript(layerEnv);
  const rootEnv: Env = { PATH: FIXED_PATH };
  chunks.forEach((c, i) => (rootEnv[`${LAYER_ENV_CARRIER}${i}`] = c));
  // A layer that is a shell program itself (every wrapper is: `/bin/sh -c PROGRAM NAME ARGS...`) runs
  // in the shell that restored its environment: one exec fewer. Its expansions are all quoted, so
  // an IFS the layer's environment sets changes nothing in it.
  const [file, flag, program, name, ...rest] = argv;
  const inline = file === SHELL && flag === '-c' && program !== undefined && name !== undefined;
  const shell = inline
    ? [restoreScript(chunks.length, program), name, ...rest]
    : [restoreScript(chunks.length), 'xce-env', ...argv];
  const args = [`--reuid=${identity.uid}`, `--regid=${identity.gid}`, '--init-groups', '--', SHELL, '-c', ...shell];
  return { file: setpriv, args, env: rootEnv, ids: null, dropped };
}
