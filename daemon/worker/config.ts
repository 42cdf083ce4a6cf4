// xcecd's configuration: command-line flags over an optional YAML file over defaults. One
// function resolves it (testable without a process); errors name the flag or the file's field.
//
// YAML (every key optional):
//   host: node01
//   controllers: [ctl1:7400, ctl2:7400, ctl3:7400]   # in id order: the next after a lost leader leads next
//   slots: 64
//   mem: 256G
//   booleans: [ib, x86_64]
//   numerics: { gpu: 4 }
//   strings: { rack: r1 }
//   launcher: mpirun                 # or { openmpi: /opt/ompi/bin/mpirun, mpich: mpiexec.hydra }
//   state_dir: /var/lib/xce/xcecd
//   credential_file: /etc/xce/host.credential   # this host's own key (xceadmin host enroll), mode 0600
//   ca_file: /etc/xce/ca.pem                     # the CA of the controllers' certificates (wss://)
//   insecure_dev: false                          # true: plain ws:// without TLS (development only)
//   kill_grace: 10s
//   hook_timeout: 10m
//   jobs_max: 1024
//   spawner: auto                    # native (xce-spawn, spawner.ts), node, or auto: native when built

import { cpus, hostname, totalmem } from 'node:os';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { parseDuration, parseSize } from '../../model/units.js';
import type { Resources } from '../worker-protocol.js';
import { JOBS_RUNNING_MAX_DEFAULT, JOBS_RUNNING_MAX_LIMIT } from './executor.js';
import { DEFAULT_LAUNCHERS, type Launchers, parseLaunchers } from './launch.js';
import { LaunchError } from './launch-error.js';
import { SPAWNER_MODES, type SpawnerMode } from './spawner.js';

export const KILL_GRACE_MS_DEFAULT = 10_000;
export const HOOK_TIMEOUT_MS_DEFAULT = 10 * 60_000;
export const CONFIG_FILE_BYTES_MAX = 1024 * 1024;

export class WorkerConfigError extends Error {
  override readonly name = 'WorkerConfigError';
  constructor(message: string) {
    super(message);
  }
}

const FileSchema = z.strictObject({
  host: z.string().min(1).optional(),
  controllers: z.union([z.array(z.string().min(1)).min(1), z.string().min(1)]).optional(),
  slots: z.number().int().positive().optional(),
  mem: z.union([z.string(), z.number().int().nonnegative()]).optional(),
  booleans: z.array(z.string().min(1)).optional(),
  numerics: z.record(z.string().min(1), z.number().finite()).optional(),
  strings: z.record(z.string().min(1), z.string().min(1)).optional(),
  launcher: z
    .union([
      z.string().min(1),
      z.strictObject({ openmpi: z.string().min(1).optional(), mpich: z.string().min(1).optional() }),
    ])
    .optional(),
  state_dir: z.string().min(1).optional(),
  credential_file: z.string().min(1).optional(),
  ca_file: z.string().min(1).optional(),
  insecure_dev: z.boolean().optional(),
  kill_grace: z.union([z.string(), z.number().int().nonnegative()]).optional(),
  hook_timeout: z.union([z.string(), z.number().int().positive()]).optional(),
  jobs_max: z.number().int().positive().optional(),
  spawner: z.enum(SPAWNER_MODES).optional(),
});
export type WorkerConfigFile = z.infer<typeof FileSchema>;

/** The flags as commander gives them (all strings; repeated ones as arrays). */
export interface WorkerFlags {
  readonly host?: string;
  readonly controllers?: string;
  readonly slots?: string;
  readonly mem?: string;
  readonly bool?: string;
  readonly num?: readonly string[];
  readonly str?: readonly string[];
  readonly launcher?: string;
  readonly stateDir?: string;
  readonly credentialFile?: string;
  readonly caFile?: string;
  readonly insecureDev?: boolean;
  readonly killGrace?: string;
  readonly hookTimeout?: string;
  readonly jobsMax?: string;
  readonly spawner?: string;
}

export interface WorkerConfig {
  readonly host: string;
  readonly controllers: readonly string[];
  readonly resources: Resources;
  readonly launchers: Launchers;
  readonly stateDir: string;
  /** This host's credential file (xceadmin host enroll); null: none (only a stand-in controller takes that). */
  readonly credentialFile: string | null;
  /** The CA file to verify the controllers' certificates with; null: with insecureDev, plain ws. */
  readonly caFile: string | null;
  /** Plain ws:// without TLS (development only). */
  readonly insecureDev: boolean;
  readonly killGrace_ms: number;
  readonly hookTimeout_ms: number;
  readonly jobsMax: number;
  readonly spawner: SpawnerMode;
}

export function parseConfigFile(text: string, path: string): WorkerConfigFile {
  if (text.length > CONFIG_FILE_BYTES_MAX)
    throw new WorkerConfigError(`${path}: larger than ${CONFIG_FILE_BYTES_MAX} bytes`);
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (err) {
    throw new WorkerConfigError(`${path}: not YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  const r = FileSchema.safeParse(raw);
  if (!r.success) {
    throw new WorkerConfigError(
      `${path}: ${r.error.issues
        .slice(0, 3)
        .map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`)
        .join('; ')}`,
    );
  }
  return r.data;
}

function list(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function keyValues(items: readonly string[], flag: string, numeric: boolean): Record<string, number | string> {
  const out: Record<string, number | string> = {};
  for (const item of items.flatMap(list)) {
    const eq = item.indexOf('=');
    const k = item.slice(0, eq).trim();
    const v = item.slice(eq + 1).trim();
    if (eq <= 0 || v === '') throw new WorkerConfigError(`${flag} "${item}": expected name=value`);
    if (numeric) {
      const n = Number(v);
      if (!Number.isFinite(n)) throw new WorkerConfigError(`${flag} "${item}": ${v} is not a number`);
      out[k] = n;
    } else out[k] = v;
  }
  return out;
}

function positiveInt(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0) throw new WorkerConfigError(`${flag} "${text}": expected a positive integer`);
  return n;
}

function duration_ms(value: string | number, what: string): number {
  if (typeof value === 'number') return value * 1000;
  try {
    return parseDuration(value) * 1000;
  } catch (err) {
    throw new WorkerConfigError(`${what}: ${(err as Error).message}`);
  }
}

function size(value: string | number, what: string): number {
  if (typeof value === 'number') return value;
  try {
    return parseSize(value);
  } catch (err) {
    throw new WorkerConfigError(`${what}: ${(err as Error).message}`);
  }
}

const HOST_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;

function controllersOf(flags: WorkerFlags, file: WorkerConfigFile, env: Record<string, string | undefined>): string[] {
  const controllers =
    flags.controllers !== undefined
      ? list(flags.controllers)
      : file.controllers !== undefined
        ? typeof file.controllers === 'string'
          ? list(file.controllers)
          : file.controllers
        : list(env['XCE_CONTROLLERS'] ?? '');
  if (controllers.length === 0)
    throw new WorkerConfigError(
      'no controller address: give --controllers host:port,..., XCE_CONTROLLERS or controllers: in the config file',
    );
  return controllers;
}

function launchersOf(flags: WorkerFlags, file: WorkerConfigFile): Launchers {
  try {
    if (flags.launcher !== undefined) return parseLaunchers(flags.launcher);
    if (typeof file.launcher === 'string') return parseLaunchers(file.launcher);
    if (file.launcher !== undefined) return { ...DEFAULT_LAUNCHERS, ...file.launcher };
    return DEFAULT_LAUNCHERS;
  } catch (err) {
    if (err instanceof LaunchError) throw new WorkerConfigError(err.reason);
    throw err;
  }
}

/**
 * What the worker registers for its host. Booleans and strings are left out when neither the flags
 * nor the file state any: the leader then keeps hosts.yaml's (statemachine/host-capacity.ts).
 */
function resourcesOf(flags: WorkerFlags, file: WorkerConfigFile): Resources {
  const strings = {
    ...(file.strings ?? {}),
    ...(keyValues(flags.str ?? [], '--str', false) as Record<string, string>),
  };
  const booleans = flags.bool !== undefined ? list(flags.bool) : file.booleans;
  return {
    slots: flags.slots !== undefined ? positiveInt(flags.slots, '--slots') : (file.slots ?? cpus().length),
    mem_bytes:
      flags.mem !== undefined ? size(flags.mem, '--mem') : file.mem !== undefined ? size(file.mem, 'mem') : totalmem(),
    ...(booleans !== undefined ? { booleans } : {}),
    numerics: { ...(file.numerics ?? {}), ...(keyValues(flags.num ?? [], '--num', true) as Record<string, number>) },
    ...(Object.keys(strings).length > 0 ? { strings } : {}),
  };
}

function jobsMaxOf(flags: WorkerFlags, file: WorkerConfigFile): number {
  const jobsMax =
    flags.jobsMax !== undefined
      ? positiveInt(flags.jobsMax, '--jobs-max')
      : (file.jobs_max ?? JOBS_RUNNING_MAX_DEFAULT);
  if (jobsMax > JOBS_RUNNING_MAX_LIMIT)
    throw new WorkerConfigError(
      `jobs_max ${jobsMax}: at most ${JOBS_RUNNING_MAX_LIMIT} jobs may run at once on one host`,
    );
  return jobsMax;
}

/** A duration from the flag, else the file's key, else the default (ms). */
function durationOf(
  flag: string | undefined,
  flagName: string,
  fromFile: string | number | undefined,
  key: string,
  default_ms: number,
): number {
  if (flag !== undefined) return duration_ms(flag, flagName);
  if (fromFile !== undefined) return duration_ms(fromFile, key);
  return default_ms;
}

/** Flags over the file over defaults. `env` gives XCE_CONTROLLERS. */
export function resolveWorkerConfig(
  flags: WorkerFlags,
  file: WorkerConfigFile,
  env: Record<string, string | undefined>,
): WorkerConfig {
  const host = flags.host ?? file.host ?? hostname().split('.')[0] ?? 'localhost';
  if (!HOST_NAME.test(host))
    throw new WorkerConfigError(`host name "${host}": letters, digits, dot, dash and underscore only (--host)`);
  return {
    host,
    controllers: controllersOf(flags, file, env),
    resources: resourcesOf(flags, file),
    launchers: launchersOf(flags, file),
    stateDir: flags.stateDir ?? file.state_dir ?? `.data/xcecd-${host}`,
    credentialFile: flags.credentialFile ?? file.credential_file ?? null,
    killGrace_ms: durationOf(flags.killGrace, '--kill-grace', file.kill_grace, 'kill_grace', KILL_GRACE_MS_DEFAULT),
    hookTimeout_ms: durationOf(
      flags.hookTimeout,
      '--hook-timeout',
      file.hook_timeout,
      'hook_timeout',
      HOOK_TIMEOUT_MS_DEFAULT,
    ),
    jobsMax: jobsMaxOf(flags, file),
    spawner: spawnerOf(flags.spawner ?? file.spawner),
    ...transport(flags, file),
  };
}

function spawnerOf(mode: string | undefined): SpawnerMode {
  if (mode === undefined) return 'auto';
  if ((SPAWNER_MODES as readonly string[]).includes(mode)) return mode as SpawnerMode;
  throw new WorkerConfigError(`--spawner ${mode}: expected ${SPAWNER_MODES.join(', ')}`);
}

/** TLS (a CA file) or, said explicitly, plain ws: one of the two. */
function transport(flags: WorkerFlags, file: WorkerConfigFile): { caFile: string | null; insecureDev: boolean } {
  const caFile = flags.caFile ?? file.ca_file ?? null;
  const insecureDev = flags.insecureDev ?? file.insecure_dev ?? false;
  if (caFile !== null && insecureDev)
    throw new WorkerConfigError('give either --ca-file (TLS) or --insecure-dev (plain ws), not both');
  if (caFile === null && !insecureDev)
    throw new WorkerConfigError(
      "no --ca-file: the controllers' CA is needed to verify them over TLS (or --insecure-dev for a development cluster without TLS)",
    );
  return { caFile, insecureDev };
}
