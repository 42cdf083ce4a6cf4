// Reads a configuration directory for the pure loader (model/config.ts): every *.yaml file
// at its top level, by name. Sub-folders (configs/schema/) and other files are not read.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ConfigFileText } from '../model/config.js';

export class ConfigDirError extends Error {
  override readonly name = 'ConfigDirError';
}

export function readConfigDir(dir: string): ConfigFileText[] {
  let names: string[];
  try {
    if (!statSync(dir).isDirectory())
      throw new ConfigDirError(`${dir} is not a directory; give the folder holding xce.yaml, applications.yaml, ...`);
    names = readdirSync(dir);
  } catch (e) {
    if (e instanceof ConfigDirError) throw e;
    throw new ConfigDirError(
      `cannot read configuration directory ${dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
  return names
    .filter((n) => n.endsWith('.yaml') || n.endsWith('.yml'))
    .sort()
    .filter((n) => statSync(join(dir, n)).isFile())
    .map((n) => ({ path: join(dir, n), text: readFileSync(join(dir, n), 'utf8') }));
}
