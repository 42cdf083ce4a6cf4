// A job submitted as a script (`xcecli jobs submit job.sh`): the worker writes the stored script to
// a private file and runs it as the job layer, by its interpreter line (`#!/bin/bash -l`) or, with
// none, by /bin/sh, as LSF runs a `bsub < job.sh` script.
//
// The file is created by the job layer's own wrapper, as the execution user, under umask 077 and
// with noclobber (a name someone else made first, a symlink included, fails the run: never written
// through), from the script piped to it on its standard input; the worker removes it once the job
// layer ended. The interpreter is exec'd with the file as its argument, so the file needs no
// execute permission and /tmp may be mounted noexec.

import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { Logger } from '../log.js';
import type { StartInfo } from '../worker-protocol.js';
import { arrayIdOf, arrayIndexOf, isElementId } from '../../model/job-id.js';

/** Where a run's script file is created (the execution user's TMPDIR is not known to the worker before the switch). */
export const SCRIPT_DIR = '/tmp';
/** The interpreter of a script without an interpreter line. */
export const SCRIPT_SHELL = '/bin/sh';

/** A fresh, unguessable path for one run's script file. */
export function scriptPath(host: string, jobId: number, run: number): string {
  return `${SCRIPT_DIR}/xce-job-${host}-${jobId}.${run}-${randomBytes(6).toString('hex')}.sh`;
}

/**
 * The interpreter argv of a script: its `#!` line, split as Linux does (the program, then the rest
 * of the line as one argument, if any), or SCRIPT_SHELL when it has none.
 */
export function interpreterOf(script: string): string[] {
  if (!script.startsWith('#!')) return [SCRIPT_SHELL];
  const nl = script.indexOf('\n');
  const line = (nl < 0 ? script.slice(2) : script.slice(2, nl)).replace(/\r$/, '').trim();
  if (line === '') return [SCRIPT_SHELL];
  const ws = line.search(/[ \t]/);
  if (ws < 0) return [line];
  const rest = line.slice(ws).trim();
  return rest === '' ? [line.slice(0, ws)] : [line.slice(0, ws), rest];
}

/** The job's command with the script in its place: the interpreter, the file, then the script's arguments (`command` after its name). */
export function scriptCommand(script: string, file: string, command: readonly string[]): string[] {
  return [...interpreterOf(script), file, ...command.slice(1)];
}

/** The run as it executes: a script's run has the interpreter and the script file in its command. */
export function scriptRun(info: StartInfo, host: string): { runs: StartInfo; scriptFile: string | null } {
  const script = info.script ?? null;
  if (script === null) return { runs: info, scriptFile: null };
  const file = scriptPath(host, info.jobId, info.run);
  return { runs: { ...info, command: scriptCommand(script, file, info.command) }, scriptFile: file };
}

/** Removes a run's script file once the job layer ended; a file already gone is fine, a failure is logged. */
export async function removeScript(file: string, log: Logger): Promise<void> {
  await rm(file, { force: true }).catch((err: unknown) =>
    log.warn('cannot remove a job script file', { file, error: err as Error }),
  );
}

/**
 * `xce-%J.out` with `%J` replaced by the job id (an array element's: its array's) and `%I` by the
 * array index (0 for a plain job); null → the default name (`xce-%J_%I.out` for an element).
 */
export function outputPath(template: string | null, jobId: number, ext: 'out' | 'err'): string {
  const element = isElementId(jobId);
  const t = template ?? (element ? `xce-%J_%I.${ext}` : `xce-%J.${ext}`);
  return t.replaceAll('%J', String(element ? arrayIdOf(jobId) : jobId)).replaceAll('%I', String(arrayIndexOf(jobId)));
}
