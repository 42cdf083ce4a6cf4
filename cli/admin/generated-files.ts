// What `xceadmin config schema` and `xceadmin openapi` share: files generated from the code and
// checked in, written by the command or (`--check`) compared with what the code generates now.

import { readFileSync } from 'node:fs';

/** The text of `path`, or null when it cannot be read (missing, say). */
export function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** How a command's generated files are checked and written. */
export interface GeneratedFiles {
  /** Null when the files at `out` are current, else what is stale (`X is stale or missing`). */
  stale(): string | null;
  /** Writes them; what was written (`wrote X`). */
  write(): string;
}

/**
 * The action of `xceadmin <command> [--check] [--out OUT]`: `--check` writes nothing and sets exit
 * status 1 when a file is stale, naming the command that regenerates it; otherwise writes them.
 */
export function writeOrCheck(command: string, opts: { out: string; check?: boolean }, files: GeneratedFiles): void {
  if (!opts.check) {
    process.stdout.write(`${command}: ${files.write()}\n`);
    return;
  }
  const stale = files.stale();
  if (stale === null) {
    process.stdout.write(`${command}: ${opts.out} is current\n`);
    return;
  }
  process.stderr.write(`${command}: ${stale}; run \`xceadmin ${command} --out ${opts.out}\`\n`);
  process.exitCode = 1;
}
