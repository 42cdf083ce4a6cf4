// Reads a configuration directory for the pure loader (model/config.ts): every *.yaml file
// at its top level, by name, and the site presets in its `presets/` folder (one preset per
// *.yaml file). Other sub-folders (configs/schema/) and other files are not read.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ConfigFileText } from '../model/config.js';
import { PRESETS_DIR } from '../model/config-presets.js';

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
  const presetsDir = join(dir, PRESETS_DIR);
  const presets = names.includes(PRESETS_DIR) && statSync(presetsDir).isDirectory() ? yamlFiles(presetsDir) : [];
  return [...yamlFiles(dir, names), ...presets];
}

function yamlFiles(dir: string, names: readonly string[] = readdirSync(dir)): ConfigFileText[] {
  return names
    .filter((n) => n.endsWith('.yaml') || n.endsWith('.yml'))
    .sort()
    .filter((n) => statSync(join(dir, n)).isFile())
    .map((n) => ({ path: join(dir, n), text: readFileSync(join(dir, n), 'utf8') }));
}
