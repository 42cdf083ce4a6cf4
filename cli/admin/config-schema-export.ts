// Writes (or checks) configs/schema/<file>.schema.json from the zod schemas in
// model/config-schema.ts, so editors validate the YAML (`# yaml-language-server: $schema=`).
//   xceadmin config schema [--out DIR]      write them
//   xceadmin config schema --check [--out DIR]   exit 1 when a checked-in file is stale

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { CONFIG_FILE_NAMES, configFileJsonSchema, type ConfigFileName } from '../../model/config-schema.js';
import { presetJsonSchema } from '../../model/preset-schema.js';
import { readOrNull, writeOrCheck } from './generated-files.js';

export function schemaFileName(file: ConfigFileName): string {
  return file.replace(/\.yaml$/, '.schema.json');
}

/** The exact text written for each file (2-space JSON, trailing newline). */
export function configSchemaTexts(): Map<string, string> {
  const out = new Map<string, string>();
  for (const f of CONFIG_FILE_NAMES)
    out.set(schemaFileName(f), `${JSON.stringify(configFileJsonSchema(f), null, 2)}\n`);
  // A preset file (site presets in presets/, a user's in ~/.config/xce/presets/): one preset each.
  out.set('preset.schema.json', `${JSON.stringify(presetJsonSchema(), null, 2)}\n`);
  return out;
}

/** Names of the files under `dir` that are missing or differ from what the schemas generate. */
export function staleConfigSchemas(dir: string): string[] {
  const stale: string[] = [];
  for (const [name, text] of configSchemaTexts()) if (readOrNull(join(dir, name)) !== text) stale.push(name);
  return stale;
}

export function writeConfigSchemas(dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  for (const [name, text] of configSchemaTexts()) {
    writeFileSync(join(dir, name), text);
    written.push(name);
  }
  return written;
}

export function registerConfigSchema(config: Command): void {
  config
    .command('schema')
    .description('write the JSON Schemas of the configuration files (for editors), or --check that they are current')
    .option('--out <dir>', 'where the schemas go', 'configs/schema')
    .option('--check', 'write nothing; exit 1 when a file is missing or stale')
    .action((opts: { out: string; check?: boolean }) =>
      writeOrCheck('config schema', opts, {
        stale: () => {
          const stale = staleConfigSchemas(opts.out);
          return stale.length > 0 ? `stale in ${opts.out}: ${stale.join(', ')}` : null;
        },
        write: () => `wrote ${writeConfigSchemas(opts.out).length} files to ${opts.out}`,
      }),
    );
}
