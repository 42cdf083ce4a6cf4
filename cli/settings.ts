// Where the command-line tools find their controllers and token.
// Controllers: --controllers, then XCE_CONTROLLERS, then the user's config file
// ($XCE_CONFIG_DIR or $XDG_CONFIG_HOME/xce or ~/.config/xce: config.yaml `controllers: [...]`).
// The token from `xcecli login` is stored in that directory as `token`, mode 0600.

import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync, renameSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';

export class SettingsError extends Error {
  override readonly name = 'SettingsError';
}

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env['XCE_CONFIG_DIR']) return env['XCE_CONFIG_DIR'];
  const xdg = env['XDG_CONFIG_HOME'];
  return join(xdg && xdg !== '' ? xdg : join(homedir(), '.config'), 'xce');
}

function splitList(text: string): string[] {
  return text.split(/[,\s]+/).filter((s) => s !== '');
}

export function resolveControllers(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string[] {
  if (flag !== undefined && flag !== '') return splitList(flag);
  if (env['XCE_CONTROLLERS']) return splitList(env['XCE_CONTROLLERS']);
  const file = join(configDir(env), 'config.yaml');
  if (existsSync(file)) {
    let doc: unknown;
    try {
      doc = parseYaml(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new SettingsError(`${file}: not valid YAML: ${(err as Error).message}`);
    }
    const list = (doc as { controllers?: unknown } | null)?.controllers;
    if (Array.isArray(list) && list.every((x) => typeof x === 'string') && list.length > 0) return list as string[];
    if (list !== undefined) throw new SettingsError(`${file}: controllers must be a list of host:port strings`);
  }
  return ['127.0.0.1:7101'];
}

export function readToken(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env['XCE_TOKEN']) return env['XCE_TOKEN'];
  const file = join(configDir(env), 'token');
  return existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined;
}

/** Writes the token readable by its owner only; the file is replaced atomically. */
export function saveToken(token: string, env: NodeJS.ProcessEnv = process.env): string {
  const dir = configDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, 'token');
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, `${token}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
  return file;
}
