// Job scripts (`xcecli jobs submit [OPTIONS] job.sh` and `xcecli jobs submit < job.sh`): the
// directive lines at the top of a script carry submit options, as `#BSUB` lines do for LSF's bsub:
//
//   #!/bin/bash
//   #XCE --app openfoam -n 64
//   #XCE -R "select[ib]" -o out.%J
//   #BSUB -J cfd -W 2:00
//
// `#XCE` lines take the options of the command line (`xcecli jobs submit --help`); `#BSUB` lines
// take LSF's common ones (-J, -n, -q, -R, -o, -e, -W, -app, -cwd), so that an LSF script runs
// unchanged, and name the others as not supported. Directives are read up to the first line that
// is neither blank nor a comment (bsub's rule); options on the command line win over them (per
// name for -e and -l). A problem is a DirectiveError naming the line: `job.sh:3: #XCE --foo:
// unknown option`.

import { closeSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { utf8Bytes, SCRIPT_BYTES_MAX } from '../model/job-limits.js';
import type { SubmitFlags } from './submit-args.js';
import { UsageError } from './numeric-flags.js';

/** Characters of one directive line (a longer one is refused: no option needs it). */
export const DIRECTIVE_LINE_CHARS_MAX = 64 * 1024;

export class DirectiveError extends UsageError {}

/** The submit flags a script's directives set, and where each came from (`job.sh:3`). */
export interface Directives {
  readonly flags: SubmitFlags & { preset?: string[] };
  /** The directive lines read, for --dry-run (`job.sh:2: #XCE -n 4`). */
  readonly lines: readonly string[];
}

type Key = Exclude<keyof SubmitFlags, 'env' | 'limit'> | 'env' | 'limit' | 'preset';

/** `#XCE` options: the command line's (cli/xcecli-program.ts `jobs submit`). */
const XCE_OPTIONS: Readonly<Record<string, Key>> = {
  '-a': 'app',
  '--app': 'app',
  '-q': 'queue',
  '--queue': 'queue',
  '-J': 'name',
  '--name': 'name',
  '-n': 'tasks',
  '--tasks': 'tasks',
  '-R': 'resreq',
  '--resreq': 'resreq',
  '-e': 'env',
  '--env': 'env',
  '-l': 'limit',
  '--limit': 'limit',
  '--pre-exec': 'preExec',
  '--post-exec': 'postExec',
  '--cwd': 'cwd',
  '-o': 'output',
  '--output': 'output',
  '--error': 'error',
  '--preset': 'preset',
};

/** `#BSUB` options xcecli takes (LSF's meaning: `-e` is the stderr file, `-W` the run limit in [hours:]minutes). */
const BSUB_OPTIONS: Readonly<Record<string, Key | 'runlimit'>> = {
  '-J': 'name',
  '-n': 'tasks',
  '-q': 'queue',
  '-R': 'resreq',
  '-o': 'output',
  '-e': 'error',
  '-W': 'runlimit',
  '-app': 'app',
  '-cwd': 'cwd',
};

/** `#BSUB` options xcecli does not take, with what to write instead where there is something. */
const BSUB_UNSUPPORTED: Readonly<Record<string, string>> = {
  '-M': 'use #XCE -l memory=SIZE (e.g. 4G)',
  '-c': 'use #XCE -l cpu=DURATION',
  '-oo': 'use -o (xcecd appends to the output file)',
  '-eo': 'use -e (xcecd appends to the error file)',
  '-w': 'job dependencies',
  '-x': 'exclusive hosts',
  '-m': 'a host list: use -R "select[...]"',
  '-P': 'projects',
  '-G': 'user groups',
  '-u': 'mail to a user',
  '-B': 'mail at dispatch',
  '-N': 'mail at the end',
  '-b': 'a begin time',
  '-t': 'a termination time',
  '-E': 'a pre-execution command: use #XCE --pre-exec',
  '-Ep': 'a post-execution command: use #XCE --post-exec',
  '-i': 'an input file',
  '-I': 'interactive jobs',
  '-Ip': 'interactive jobs',
  '-Is': 'interactive jobs',
  '-K': 'waiting for the job',
  '-L': 'a login shell',
  '-sp': 'user priorities',
  '-U': 'advance reservations',
  '-r': 'rerunnable jobs',
  '-rn': 'rerunnable jobs',
  '-k': 'checkpoints',
  '-g': 'job groups',
  '-sla': 'service classes',
  '-env': 'use #XCE -e NAME=VALUE',
  '-hl': 'host memory limits',
  '-a': 'esub applications',
  '-F': 'file size limits',
  '-D': 'data segment limits',
  '-S': 'stack limits',
  '-C': 'core file limits',
  '-v': 'swap limits',
  '-p': 'process limits',
  '-T': 'thread limits',
  '-Jd': 'job descriptions',
  '-ul': 'user shell limits',
  '-outdir': 'output directories: use -o with a path',
  '-f': 'file transfer',
  '-data': 'data requirements',
  '-gpu': 'GPU requirements: use -R "rusage[gpu=N]"',
};

/** Splits a directive's text into words as a shell would: blanks separate, '...' and "..." quote, `\` escapes. */
export function directiveWords(text: string, where: string): string[] {
  const words: string[] = [];
  let cur = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote !== null) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"' && i + 1 < text.length && '"\\$`'.includes(text[i + 1]!)) cur += text[++i];
      else cur += c;
      continue;
    }
    if (c === ' ' || c === '\t') {
      if (inWord) words.push(cur);
      cur = '';
      inWord = false;
      continue;
    }
    if (c === '#' && !inWord) break; // a comment after the options
    inWord = true;
    if (c === "'" || c === '"') quote = c;
    else if (c === '\\' && i + 1 < text.length) cur += text[++i];
    else cur += c;
  }
  if (quote !== null) throw new DirectiveError(`${where}: unterminated ${quote === '"' ? 'double' : 'single'} quote`);
  if (inWord) words.push(cur);
  return words;
}

/** LSF's run limit `[hours:]minutes` as a --limit runtime value (`2:30` → `150m`). */
export function bsubRunLimit(value: string, where: string): string {
  const m = /^(?:(\d{1,6}):)?(\d{1,8})$/.exec(value.trim());
  if (m === null)
    throw new DirectiveError(`${where}: #BSUB -W ${value}: expected [hours:]minutes, e.g. -W 90 or -W 1:30`);
  const minutes = Number(m[1] ?? 0) * 60 + Number(m[2]);
  if (minutes === 0) throw new DirectiveError(`${where}: #BSUB -W ${value}: the run limit must be larger than zero`);
  return `${minutes}m`;
}

/** Reads the directives of a script (`name` is how errors name it: the file, or `stdin`). Throws DirectiveError. */
export function parseDirectives(script: string, name: string): Directives {
  const flags: SubmitFlags & { preset?: string[] } = {};
  const lines: string[] = [];
  const seen = new Map<string, string>();
  const text = script.split('\n');
  for (let i = 0; i < text.length; i++) {
    const raw = text[i]!.replace(/\r$/, '');
    const line = raw.trim();
    if (line === '') continue;
    if (!line.startsWith('#')) break; // the first command: no directive after it
    const m = /^#(XCE|BSUB)(?=\s|$)(.*)$/.exec(line);
    if (m === null) continue; // a comment, or the interpreter line
    const where = `${name}:${i + 1}`;
    if (raw.length > DIRECTIVE_LINE_CHARS_MAX)
      throw new DirectiveError(`${where}: a directive line is longer than ${DIRECTIVE_LINE_CHARS_MAX} characters`);
    const kind = m[1] as 'XCE' | 'BSUB';
    const words = directiveWords(m[2]!, where);
    lines.push(`${where}: ${line}`);
    for (let w = 0; w < words.length; w++) {
      let opt = words[w]!;
      let value: string | undefined;
      const eq = opt.startsWith('--') ? opt.indexOf('=') : -1;
      if (eq > 0) {
        value = opt.slice(eq + 1);
        opt = opt.slice(0, eq);
      }
      const key = kind === 'XCE' ? XCE_OPTIONS[opt] : BSUB_OPTIONS[opt];
      if (key === undefined) {
        const hint = kind === 'BSUB' ? BSUB_UNSUPPORTED[opt] : undefined;
        if (hint !== undefined)
          throw new DirectiveError(`${where}: #BSUB ${opt} is not supported by xcecli (${hint}); remove the option`);
        const what = opt.startsWith('-') ? 'unknown option' : 'expected an option, not a value';
        const help =
          kind === 'XCE'
            ? 'the options of `xcecli jobs submit --help`'
            : `#BSUB ${Object.keys(BSUB_OPTIONS).join(' ')}`;
        throw new DirectiveError(`${where}: #${kind} ${opt}: ${what} (a directive takes ${help})`);
      }
      if (value === undefined) {
        value = words[++w];
        if (value === undefined) throw new DirectiveError(`${where}: #${kind} ${opt} needs a value`);
      }
      if (key === 'env' || key === 'limit' || key === 'preset') {
        (flags[key] ??= []).push(value);
        continue;
      }
      if (key === 'runlimit') {
        (flags.limit ??= []).push(`runtime=${bsubRunLimit(value, where)}`);
        continue;
      }
      const target = key;
      const before = seen.get(target);
      if (before !== undefined)
        throw new DirectiveError(`${where}: #${kind} ${opt} is given again (first at ${before}): give it once`);
      seen.set(target, where);
      flags[target] = value;
    }
  }
  return { flags, lines };
}

/** A later list of NAME=VALUE items replaces an earlier one's items of the same NAME (the command line wins per name). */
function byName(base: readonly string[] | undefined, over: readonly string[] | undefined): string[] | undefined {
  if (base === undefined) return over === undefined ? undefined : [...over];
  if (over === undefined) return [...base];
  const name = (s: string): string => s.slice(0, Math.max(0, s.indexOf('=')));
  const replaced = new Set(over.map(name));
  return [...base.filter((s) => !replaced.has(name(s))), ...over];
}

/** The directives' flags overridden by the command line's: each option as a whole, -e and -l per name. */
export function withCommandLine<F extends SubmitFlags & { preset?: string[] }>(
  directives: SubmitFlags & { preset?: string[] },
  commandLine: F,
): F {
  const out: F = { ...commandLine };
  for (const [k, v] of Object.entries(directives) as Array<[keyof SubmitFlags | 'preset', unknown]>) {
    if (k === 'env' || k === 'limit') continue;
    if (k === 'preset') {
      if (out.preset === undefined) out.preset = v as string[];
      continue;
    }
    if (out[k] === undefined) (out as Record<string, unknown>)[k] = v;
  }
  const env = byName(directives.env, commandLine.env);
  if (env !== undefined) out.env = env;
  const limit = byName(directives.limit, commandLine.limit);
  if (limit !== undefined) out.limit = limit;
  return out;
}

/** Refuses a script above SCRIPT_BYTES_MAX before anything is sent, naming the limit. */
export function checkScriptSize(script: string, name: string): void {
  const bytes = utf8Bytes(script);
  if (bytes > SCRIPT_BYTES_MAX)
    throw new UsageError(
      `${name}: the job script is ${bytes} bytes, larger than the limit of ${SCRIPT_BYTES_MAX} bytes (1 MiB)`,
    );
}

/** The name a script read from standard input goes by (its command word, and in error messages). */
export const STDIN_SCRIPT_NAME = 'stdin';

/** Bytes at the start of a file looked at to tell a script (text) from a program (a NUL byte). */
const SNIFF_BYTES = 8192;

/**
 * The job script of a submit: the file `words[0]` when it is a text file (null `words`: the
 * command came after `--`; a word that names no file, or a program, is a command as before), or,
 * with no words, standard input when it is not a terminal and holds something. null: none.
 */
export async function readJobScript(
  words: readonly string[] | null,
  stdin: NodeJS.ReadStream = process.stdin,
): Promise<{ name: string; text: string } | null> {
  if (words === null) return null;
  if (words.length > 0) {
    const file = words[0]!;
    let size: number;
    try {
      const st = statSync(file);
      if (!st.isFile()) return null;
      size = st.size;
    } catch {
      return null; // not a file here: a command (on the execution host's PATH)
    }
    let head: Buffer;
    try {
      const fd = openSync(file, 'r');
      try {
        head = Buffer.alloc(Math.min(SNIFF_BYTES, size));
        head = head.subarray(0, readSync(fd, head, 0, head.length, 0));
      } finally {
        closeSync(fd);
      }
    } catch (e) {
      throw new UsageError(
        `${file}: cannot read the job script (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      );
    }
    if (head.includes(0)) return null; // a program, not a script: run as a command
    if (size > SCRIPT_BYTES_MAX)
      throw new UsageError(
        `${file}: the job script is ${size} bytes, larger than the limit of ${SCRIPT_BYTES_MAX} bytes (1 MiB)`,
      );
    const text = readFileSync(file, 'utf8');
    checkScriptSize(text, file);
    return { name: file, text };
  }
  if (stdin.isTTY) return null;
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const c of stdin) {
    chunks.push(c as Buffer);
    bytes += (c as Buffer).length;
    if (bytes > SCRIPT_BYTES_MAX)
      throw new UsageError(
        `${STDIN_SCRIPT_NAME}: the job script is larger than the limit of ${SCRIPT_BYTES_MAX} bytes (1 MiB)`,
      );
  }
  if (bytes === 0) return null;
  return { name: STDIN_SCRIPT_NAME, text: Buffer.concat(chunks).toString('utf8') };
}
