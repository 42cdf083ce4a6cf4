// Where the command-line tools find their controllers and token.
// Controllers: --controllers, then XCE_CONTROLLERS, then the user's config file
// ($XCE_CONFIG_DIR or $XDG_CONFIG_HOME/xce or ~/.config/xce: config.yaml `controllers: [...]`).
// The token from `xcecli login` is stored in that directory as `token`, mode 0600, and the refresh
// token that renews it as `refresh-token` (same mode).
// TLS: the controllers are dialled over wss:// and their certificate verified against the CA of
// XCE_CA_FILE or config.yaml `ca_file:` (else the system's CAs); plain ws:// only with
// XCE_INSECURE_DEV=1 or `insecure_dev: true` (a development cluster without TLS).

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

/** The user's config.yaml, or null when there is none. */
function readSettingsFile(env: NodeJS.ProcessEnv): { file: string; doc: Record<string, unknown> } | null {
  const file = join(configDir(env), 'config.yaml');
  if (!existsSync(file)) return null;
  try {
    const doc = parseYaml(readFileSync(file, 'utf8')) as unknown;
    return { file, doc: typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>) : {} };
  } catch (err) {
    throw new SettingsError(`${file}: not valid YAML: ${(err as Error).message}`);
  }
}

/** How to dial the controllers: TLS with a CA (or the system's CAs when `ca` is absent), or null for plain ws. */
export function resolveTls(env: NodeJS.ProcessEnv = process.env): { ca?: Buffer } | null {
  const settings = readSettingsFile(env);
  const insecure = env['XCE_INSECURE_DEV'] === '1' || settings?.doc['insecure_dev'] === true;
  if (insecure) return null;
  const fromFile = settings?.doc['ca_file'];
  if (fromFile !== undefined && typeof fromFile !== 'string')
    throw new SettingsError(`${settings!.file}: ca_file must be the path of a PEM file`);
  const ca = env['XCE_CA_FILE'] || fromFile;
  if (ca === undefined || ca === '') return {};
  try {
    return { ca: readFileSync(ca) };
  } catch (err) {
    throw new SettingsError(
      `cannot read the controllers' CA file ${ca} (XCE_CA_FILE or ca_file): ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
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

/** The refresh token of `xcecli login` (file `refresh-token`); none when XCE_TOKEN gives the token. */
export function readRefreshToken(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env['XCE_TOKEN']) return undefined;
  const file = join(configDir(env), REFRESH_TOKEN_FILE);
  return existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined;
}

const REFRESH_TOKEN_FILE = 'refresh-token';

/** Writes the refresh token as saveToken writes the token. */
export function saveRefreshToken(token: string, env: NodeJS.ProcessEnv = process.env): string {
  return saveToken(token, env, REFRESH_TOKEN_FILE);
}

/** Writes the token readable by its owner only; the file is replaced atomically. */
export function saveToken(token: string, env: NodeJS.ProcessEnv = process.env, name = 'token'): string {
  const dir = configDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, name);
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, `${token}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
  return file;
}
