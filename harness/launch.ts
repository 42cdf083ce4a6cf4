// The one place that builds the command lines of `xcectld` and `xcecd` and starts them, for every
// launcher of real processes: `TestCluster` (harness/cluster.ts: end-to-end tests, the drill,
// benchmarks) and `npm start` / `npm run cluster` (harness/dev.ts). Also the copy of the shipped
// configs/ a launcher runs from (controllers moved, hosts added, files edited) and its secret file.

import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';
import type { ControllerAddress } from '../model/config-types.js';
import { deriveClusterKeys, formatHostCredential, hostCredentialKey } from '../daemon/keys.js';
import type { DevTls } from './dev-tls.js';

/** The repository (configs/ lives there). */
export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
/** The build this file is part of (`dist/`, or another `--outDir`): the daemons started are its own. */
export const distRoot = fileURLToPath(new URL('../', import.meta.url));
/** The shipped configuration. */
export const shippedConfigDir = join(repoRoot, 'configs');

export type Daemon = 'xcectld' | 'xcecd';

/** One controller's command line (xcectld's options; see daemon/xcectld.ts). */
export interface ControllerLaunch {
  readonly configDir: string;
  readonly id: number;
  readonly dataDir: string;
  readonly logFormat?: 'json' | 'pretty' | 'auto';
  readonly tick_ms?: number;
  readonly snapshotEvery?: number;
  readonly snapshotCatchup?: number;
  readonly schedulerGrace_ms?: number;
  readonly hostLost_ms?: number;
  readonly extraArgs?: readonly string[];
}

export function controllerArgs(c: ControllerLaunch): string[] {
  const args = ['--config', c.configDir, '--id', String(c.id), '--data', c.dataDir];
  if (c.logFormat !== undefined) args.push('--log-format', c.logFormat);
  if (c.tick_ms !== undefined) args.push('--tick-ms', String(c.tick_ms));
  if (c.snapshotEvery !== undefined) args.push('--snapshot-every', String(c.snapshotEvery));
  if (c.snapshotCatchup !== undefined) args.push('--snapshot-catchup', String(c.snapshotCatchup));
  if (c.schedulerGrace_ms !== undefined) args.push('--scheduler-grace-ms', String(c.schedulerGrace_ms));
  if (c.hostLost_ms !== undefined) args.push('--host-lost-ms', String(c.hostLost_ms));
  return [...args, ...(c.extraArgs ?? [])];
}

/** One worker's command line (xcecd's options; see daemon/xcecd.ts). Unset sizes: xcecd's own defaults. */
export interface WorkerLaunch {
  readonly host: string;
  /** `host:port` of every controller. */
  readonly controllers: readonly string[];
  /** This host's credential file (writeHostCredential). */
  readonly credentialFile: string;
  /** The CA of the controllers' certificates; null: plain ws (`--insecure-dev`). */
  readonly caFile: string | null;
  readonly stateDir: string;
  readonly slots?: number;
  /** With its unit, as in hosts.yaml (`16G`). */
  readonly mem?: string;
  readonly bools?: readonly string[];
  readonly nums?: Readonly<Record<string, number>>;
  /** Run jobs as the worker's own user (no identity switch): for a worker that is not root. */
  readonly runAsSelf?: boolean;
  readonly extraArgs?: readonly string[];
}

export function workerArgs(w: WorkerLaunch): string[] {
  const args = [
    '--host',
    w.host,
    '--controllers',
    w.controllers.join(','),
    '--credential-file',
    w.credentialFile,
    ...(w.caFile !== null ? ['--ca-file', w.caFile] : ['--insecure-dev']),
    '--state-dir',
    w.stateDir,
  ];
  if (w.slots !== undefined) args.push('--slots', String(w.slots));
  if (w.mem !== undefined) args.push('--mem', w.mem);
  if (w.bools?.length) args.push('--bool', w.bools.join(','));
  for (const [k, v] of Object.entries(w.nums ?? {})) args.push('--num', `${k}=${v}`);
  if (w.runAsSelf) args.push('--run-as-self');
  return [...args, ...(w.extraArgs ?? [])];
}

export interface SpawnOptions {
  /** XCE_LOG_LEVEL of the daemon. */
  readonly logLevel: string;
  /** Extra node flags (e.g. `--cpu-prof`). */
  readonly nodeArgs?: readonly string[];
  /** Run inside this network namespace (`ip netns exec`; harness/netlab.ts). */
  readonly namespace?: string;
}

/** Starts `daemon` of this build with `args`; its stdout and stderr are pipes for the caller to read. */
export function spawnDaemon(daemon: Daemon, args: readonly string[], opts: SpawnOptions): ChildProcess {
  const argv = [process.execPath, ...(opts.nodeArgs ?? []), join(distRoot, 'daemon', `${daemon}.js`), ...args];
  // `ip netns exec` enters the namespace and execs node in place: the pid is node's own, so
  // SIGKILL and SIGSTOP reach the daemon itself.
  const [cmd, ...rest] = opts.namespace ? ['ip', 'netns', 'exec', opts.namespace, ...argv] : argv;
  return spawn(cmd!, rest, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, XCE_LOG_LEVEL: opts.logLevel },
  });
}

/** A host entry added to hosts.yaml (the fields of configs/hosts.yaml). */
export interface HostEntry {
  readonly name: string;
  readonly slots: number;
  readonly mem: string;
  readonly resources: readonly string[];
  readonly numeric: Readonly<Record<string, number>>;
}

export interface ConfigCopy {
  /** Replaces xce.yaml's controllers. */
  readonly controllers?: readonly ControllerAddress[];
  /** Added to hosts.yaml. */
  readonly addHosts?: readonly HostEntry[];
  /** Serve TLS with these files (absolute paths); none: as the shipped xce.yaml says. */
  readonly tls?: DevTls;
  /** Plain ws (insecure_dev: true) instead of TLS. */
  readonly insecure?: boolean;
  /** File name → new text from the text written so far. */
  readonly edit?: Readonly<Record<string, (text: string) => string>>;
}

/**
 * Writes a copy of the shipped configs/ to `dest` with `copy`'s changes (files it does not change
 * are copied as they are); returns the cluster secret (xce.yaml's inline `secret`).
 */
export function writeConfigCopy(dest: string, copy: ConfigCopy = {}): string {
  mkdirSync(dest, { recursive: true });
  let secret = '';
  for (const f of readdirSync(shippedConfigDir).filter((x) => x.endsWith('.yaml'))) {
    let text = readFileSync(join(shippedConfigDir, f), 'utf8');
    if (f === 'xce.yaml') {
      const doc = parseDocument(text);
      if (copy.controllers !== undefined) {
        doc.set(
          'controllers',
          copy.controllers.map((c) => ({ id: c.id, host: c.host, port: c.port })),
        );
        text = doc.toString();
      }
      secret = String(doc.get('secret'));
      if (copy.insecure) {
        doc.delete('tls');
        doc.set('insecure_dev', true);
      } else if (copy.tls !== undefined) {
        doc.set('tls', { cert_file: copy.tls.certFile, key_file: copy.tls.keyFile, ca_file: copy.tls.caFile });
      }
      text = doc.toString();
    }
    if (f === 'hosts.yaml' && copy.addHosts?.length) {
      const doc = parseDocument(text);
      const hosts = doc.get('hosts') as { add(v: unknown): void };
      for (const h of copy.addHosts) hosts.add(doc.createNode(h));
      text = doc.toString();
    }
    const edit = copy.edit?.[f];
    writeFileSync(join(dest, f), edit ? edit(text) : text);
  }
  // The site presets (presets/*.yaml) travel with the configuration.
  const presets = join(shippedConfigDir, 'presets');
  if (existsSync(presets)) cpSync(presets, join(dest, 'presets'), { recursive: true });
  return secret;
}

/** The inline cluster secret of a configuration directory's xce.yaml. */
export function configSecret(configDir: string): string {
  return String(parseDocument(readFileSync(join(configDir, 'xce.yaml'), 'utf8')).get('secret'));
}

/** Writes the cluster's root secret to a file, owner-only (controllers only; tests read it to forge handshakes). */
export function writeSecretFile(path: string, secret: string): void {
  writeFileSync(path, secret, { mode: 0o600 });
}

/**
 * Writes `host`'s credential at `epoch`, derived from the root secret as the controllers derive
 * it (what `xceadmin host enroll` hands out), owner-only; returns the path.
 */
export function writeHostCredential(path: string, rootSecret: string, host: string, epoch = 0): string {
  const key = hostCredentialKey(deriveClusterKeys(new TextEncoder().encode(rootSecret)).workerRoot, host, epoch);
  writeFileSync(path, formatHostCredential({ host, epoch, key }), { mode: 0o600 });
  return path;
}
