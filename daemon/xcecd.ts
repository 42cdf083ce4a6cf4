#!/usr/bin/env node
// xcecd: the worker daemon of one compute host. It registers the host's resources with the leader
// controller, runs the jobs dispatched to it in layers, and reports their status until the leader
// has them (daemon/worker/README.md).
//
//   xcecd --host node01 --controllers ctl1:7400,ctl2:7400,ctl3:7400 --slots 64 --mem 256G \
//         --bool ib,x86_64 --num gpu=4 --credential-file /etc/xce/host.credential --ca-file /etc/xce/ca.pem
//
// SIGTERM / SIGINT: stop taking jobs, kill the running ones (their post-execs still run, up to a
// bound), report them finished with their signal, wait briefly for the leader's acks, save what is
// not acked, exit 0. A second signal exits at once (the state file keeps the un-acked statuses).

import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { createLogger, type Logger } from './log.js';
import type { DialTls } from './handshake.js';
import { type HostCredential, KeyError, parseHostCredential } from './keys.js';
import { WorkerAgent } from './worker/agent.js';
import {
  parseConfigFile,
  resolveWorkerConfig,
  WorkerConfigError,
  type WorkerConfig,
  type WorkerConfigFile,
  type WorkerFlags,
} from './worker/config.js';
import { FIXED_PATH } from './worker/env.js';
import { selfIdentity, workerIsRoot } from './worker/identity.js';
import { identityNotices, runsAsSubmitter } from './worker/identity-notice.js';
import { findExecutable } from './worker/launch.js';
import { sharedLauncher } from './worker/launcher.js';
import { chooseSpawner, SpawnerError } from './worker/spawner.js';
import { StateFileError } from './worker/state-file.js';

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

type Flags = WorkerFlags & { config?: string; runAsSelf?: boolean };

/** This host's credential (--credential-file, written by xceadmin host enroll); null: none. */
function loadCredential(config: WorkerConfig, log: Logger): HostCredential | null {
  if (config.credentialFile === null) {
    log.warn(
      'no host credential (--credential-file): no controller will take this worker; enroll it with xceadmin host enroll',
    );
    return null;
  }
  const credential = parseHostCredential(readFileSync(config.credentialFile, 'utf8'), config.credentialFile);
  if (credential.host !== config.host) {
    throw new WorkerConfigError(
      `${config.credentialFile} is the credential of host ${credential.host}, not of ${config.host}: enroll this host with xceadmin host enroll ${config.host}`,
    );
  }
  return credential;
}

/** TLS with the controllers' CA (--ca-file), or plain ws said loudly (--insecure-dev). */
function loadTls(config: WorkerConfig, log: Logger): DialTls | null {
  if (config.caFile !== null) return { ca: readFileSync(config.caFile) };
  log.warn(
    'INSECURE: --insecure-dev: talking to the controllers over plain ws://, unencrypted and unverified (development only)',
  );
  return null;
}

/**
 * Whose identity jobs run under, said truthfully (worker/identity-notice.ts): only a root worker
 * without --run-as-self switches to each job's submitter (with setpriv, when found).
 */
function jobIdentity(runAsSelf: boolean, log: Logger): { asRoot: boolean; setpriv: string | null } {
  const root = workerIsRoot();
  const asRoot = runsAsSubmitter({ root, runAsSelf });
  const setpriv = asRoot ? findExecutable('setpriv', FIXED_PATH) : null;
  const notices = identityNotices({ root, runAsSelf, self: selfIdentity().name, setprivFound: setpriv !== null });
  for (const n of notices) log[n.level](n.message);
  return { asRoot, setpriv };
}

/** Stops on SIGTERM / SIGINT (see the file comment); a second signal exits at once. */
function stopOnSignals(agent: WorkerAgent, log: Logger): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      log.warn('second signal: exiting now', { signal });
      agent.close();
      process.exit(1);
    }
    stopping = true;
    log.info('stopping: killing running jobs and reporting them', { signal });
    void agent.stop().then(() => {
      log.info('stopped');
      process.exit(0);
    });
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

async function main(flags: Flags): Promise<void> {
  let file: WorkerConfigFile = {};
  if (flags.config !== undefined) file = parseConfigFile(readFileSync(flags.config, 'utf8'), flags.config);
  const config = resolveWorkerConfig(flags, file, process.env);
  const log = createLogger({ component: 'xcecd', host: config.host });
  const credential = loadCredential(config, log);
  const tls = loadTls(config, log);
  const { asRoot, setpriv } = jobIdentity(flags.runAsSelf === true, log);
  // How the launcher starts jobs (worker/spawner.ts): said at start, so that an operator can tell.
  const spawner = chooseSpawner(config.spawner);
  sharedLauncher().native = spawner.path;
  log.info(spawner.line);
  const agent = new WorkerAgent({
    host: config.host,
    controllers: config.controllers,
    resources: config.resources,
    version: packageVersion(),
    credential,
    tls,
    stateDir: config.stateDir,
    log,
    launchers: config.launchers,
    asRoot,
    setpriv,
    killGrace_ms: config.killGrace_ms,
    hookTimeout_ms: config.hookTimeout_ms,
    jobsMax: config.jobsMax,
    now: Date.now,
    random: Math.random,
  });
  log.info('xcecd starting', {
    controllers: config.controllers,
    resources: config.resources,
    stateDir: config.stateDir,
    asRoot,
  });
  agent.start();
  stopOnSignals(agent, log);
}

const program = new Command('xcecd')
  .description('XCE worker daemon: registers this host with the leader controller and runs dispatched jobs')
  .version(packageVersion())
  .option('--config <file>', 'YAML configuration file (flags override it)')
  .option('--host <name>', "this host's name as the cluster knows it (default: the short hostname)")
  .option('--controllers <list>', 'controller addresses host:port,... in id order (or XCE_CONTROLLERS)')
  .option('--slots <n>', 'job slots (default: the number of CPUs); the scheduler uses at most what hosts.yaml allows')
  .option('--mem <size>', 'memory for jobs, e.g. 256G (default: the total memory); likewise capped by hosts.yaml')
  .option('--bool <list>', 'boolean resources this host has, e.g. ib,x86_64 (default: state none, hosts.yaml stands)')
  .option('--num <name=value>', 'a numeric resource, e.g. gpu=4 (repeatable)', collect, [])
  .option('--str <name=value>', 'a string resource, e.g. rack=r1 (repeatable)', collect, [])
  .option('--launcher <command>', 'MPI launcher: mpirun, or openmpi=<cmd>,mpich=<cmd> (default mpirun)')
  .option(
    '--state-dir <dir>',
    'where statuses not yet acked and running jobs are remembered across a restart (default .data/xcecd-<host>)',
  )
  .option('--credential-file <file>', "this host's credential (written by xceadmin host enroll), mode 0600")
  .option('--ca-file <file>', "the CA that signed the controllers' certificates (TLS, wss://)")
  .option('--insecure-dev', 'plain ws:// without TLS: development only')
  .option('--kill-grace <duration>', 'time between SIGTERM and SIGKILL when a job is killed (default 10s)')
  .option('--hook-timeout <duration>', 'longest a pre-exec or post-exec may run (default 10m)')
  .option('--spawner <mode>', 'how jobs are started: native (xce-spawn), node, or auto (native when built; default)')
  .option('--jobs-max <n>', 'most jobs running at once on this host (default 1024)')
  .option(
    '--run-as-self',
    "run every job as this daemon's own user even when root (development and tests only; a worker that is not root always does)",
  )
  .action(async (opts: Flags) => {
    try {
      await main(opts);
    } catch (err) {
      const known = [WorkerConfigError, StateFileError, KeyError, SpawnerError];
      if (known.some((k) => err instanceof k)) {
        process.stderr.write(`xcecd: ${(err as Error).message}\n`);
        process.exit(2);
      }
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'EACCES') {
        process.stderr.write(`xcecd: ${(err as Error).message}\n`);
        process.exit(2);
      }
      throw err;
    }
  });

await program.parseAsync();
