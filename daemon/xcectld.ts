#!/usr/bin/env node
// xcectld: one controller process (Raft member, state machine, client API; on the leader the
// scheduler and dispatcher). SIGTERM/SIGINT stop it gracefully, handing leadership over first.

import { Command, InvalidArgumentError, Option } from 'commander';
import { dirname, resolve } from 'node:path';
import { Controller, ControllerStartError, EXIT_CODE_FAIL_STOP } from './controller.js';
import { createLogger, parseLogLevel, type Logger } from './log.js';
import { readConfigDir, ConfigDirError } from './config-files.js';
import type { ConfigFileText } from '../model/config.js';
import { SnapshotError, WalError } from '../wal/errors.js';

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('must be a positive whole number');
  return n;
}

const program = new Command('xcectld')
  .description('XCE controller daemon (one Raft member of the controller cluster)')
  .option(
    '-c, --config <dir>',
    'configuration directory (xce.yaml, applications.yaml, ...)',
    process.env['XCE_CONFIG'] ?? 'configs',
  )
  .option(
    '-i, --id <n>',
    "this controller's id in xce.yaml controllers (default: the only one, or XCE_ID)",
    positiveInt,
  )
  .option(
    '-d, --data <dir>',
    'data directory (WAL, snapshots); default ../.data/controller-<id> beside the config directory',
  )
  .option('--listen-host <host>', 'listen on this host instead of the one xce.yaml gives')
  .option('--join', 'start empty and wait to be added to an existing cluster (xceadmin cluster add-member)')
  .option('--tick-ms <ms>', 'Raft tick length in ms', positiveInt)
  .option('--election-ticks <n>', 'election timeout in ticks (randomised in [n, 2n))', positiveInt)
  .option(
    '--snapshot-every <entries>',
    'take a snapshot about every this many applied entries (each controller at its own phase)',
    positiveInt,
  )
  .option('--snapshot-catchup <entries>', 'entries kept below a snapshot for lagging followers', positiveInt)
  .option(
    '--scheduler-grace-ms <ms>',
    'how long a new leader waits for workers to reconnect before scheduling',
    positiveInt,
  )
  .option('--host-lost-ms <ms>', 'requeue the running jobs of a host silent this long (default 60000; 0 never)', (v) =>
    Number(v),
  )
  .option('--no-scheduler', 'do not run the scheduler and dispatcher on this node when it leads')
  // Fault injection for the fail-stop tests: the WAL save after this many fails as a failed fdatasync.
  .addOption(new Option('--fault-wal-fail-after <saves>').argParser(positiveInt).hideHelp())
  .option('--log-level <level>', 'debug, info, warn or error', process.env['XCE_LOG_LEVEL'] ?? 'info')
  .option('--log-format <format>', 'json, pretty or auto (pretty on a terminal)', 'auto')
  .showHelpAfterError();

interface Options {
  config: string;
  id?: number;
  data?: string;
  listenHost?: string;
  join?: boolean;
  tickMs?: number;
  electionTicks?: number;
  snapshotEvery?: number;
  snapshotCatchup?: number;
  schedulerGraceMs?: number;
  hostLostMs?: number;
  scheduler: boolean;
  logLevel: string;
  logFormat: string;
  faultWalFailAfter?: number;
}

/** The configuration directory's files, or the exit status 2 with the reason on stderr. */
function readFiles(configDir: string): ConfigFileText[] | number {
  try {
    return readConfigDir(configDir);
  } catch (err) {
    if (err instanceof ConfigDirError) {
      process.stderr.write(`xcectld: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}

/** --id, XCE_ID, or the only controller xce.yaml lists; the exit status 2 (reason on stderr) otherwise. */
async function controllerId(o: Options, files: ConfigFileText[], configDir: string): Promise<number> {
  const envId = process.env['XCE_ID'] ? Number(process.env['XCE_ID']) : undefined;
  const id = o.id ?? envId;
  if (id !== undefined) return id;
  // Convenient for the embedded default: a configuration with one controller needs no --id.
  const probe = (await import('./controller.js')).loadBootstrapConfig(files, configDir);
  if (probe.cluster.controllers.length !== 1) {
    process.stderr.write(
      `xcectld: --id is required: xce.yaml lists ${probe.cluster.controllers.length} controllers (ids ${probe.cluster.controllers.map((c) => c.id).join(', ')})\n`,
    );
    throw new UsageExit(2);
  }
  return probe.cluster.controllers[0]!.id;
}

/** A start refused with its exit status (the reason is already on stderr). */
class UsageExit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

function controllerOptions(o: Options, id: number, configDir: string, files: ConfigFileText[], log: Logger) {
  return {
    id,
    configDir,
    configFiles: files,
    dataDir: resolve(o.data ?? defaultDataDir(configDir, id)),
    log,
    ...(o.listenHost ? { listenHost: o.listenHost } : {}),
    ...(o.join ? { join: true } : {}),
    node: {
      ...(o.tickMs ? { tick_ms: o.tickMs } : {}),
      ...(o.electionTicks ? { electionTicks: o.electionTicks } : {}),
      ...(o.snapshotEvery ? { snapshotEveryEntries: o.snapshotEvery } : {}),
      ...(o.snapshotCatchup ? { snapshotCatchupEntries: o.snapshotCatchup } : {}),
      ...(o.faultWalFailAfter !== undefined ? { walFailSave: failAfter(o.faultWalFailAfter) } : {}),
    },
    ...(o.schedulerGraceMs ? { schedulerGrace_ms: o.schedulerGraceMs } : {}),
    ...(o.hostLostMs !== undefined && Number.isInteger(o.hostLostMs) && o.hostLostMs >= 0
      ? { hostLost_ms: o.hostLostMs }
      : {}),
    scheduler: o.scheduler,
  };
}

/** SIGTERM / SIGINT stop the controller gracefully (leadership handed over first), once. */
function stopOnSignals(controller: Controller, log: Logger): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('stopping', { signal });
    void controller.stop({ transfer: true }).then(
      () => process.exit(0),
      (err: Error) => {
        log.error('error while stopping', { error: err.message });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/** The exit status of a start that failed in a way the message explains; rethrows anything else. */
function startFailure(err: unknown, log: Logger): number {
  if (err instanceof UsageExit) return err.code;
  // Corruption, a held lock, an unreadable snapshot: the message names the file and the way out.
  if (err instanceof ControllerStartError || err instanceof WalError || err instanceof SnapshotError) {
    log.error(err.message);
    process.stderr.write(`xcectld: ${err.message}\n`);
    return 1;
  }
  throw err;
}

async function main(): Promise<number> {
  program.parse(process.argv);
  const o = program.opts<Options>();
  const configDir = resolve(o.config);
  const files = readFiles(configDir);
  if (typeof files === 'number') return files;
  const format = o.logFormat === 'json' || o.logFormat === 'pretty' ? o.logFormat : 'auto';
  let log = createLogger({ component: 'xcectld' }, { level: parseLogLevel(o.logLevel, 'info'), format });
  try {
    const id = await controllerId(o, files, configDir);
    log = log.child({ node: id });
    const controller = new Controller(controllerOptions(o, id, configDir, files, log));
    // A fail-stop was logged by the node (one line: the cause and the data directory). Exit at once,
    // non-zero, for the supervisor to restart this controller; nothing more is written.
    controller.onFatal(() => process.exit(EXIT_CODE_FAIL_STOP));
    await controller.start();
    stopOnSignals(controller, log);
    return -1; // keep running
  } catch (err) {
    return startFailure(err, log);
  }
}

/** true from the (n+1)-th call on. */
function failAfter(n: number): () => boolean {
  let calls = 0;
  return () => ++calls > n;
}

const code = await main();
if (code >= 0) process.exit(code);

/** Default data directory for a controller id, beside the config directory's parent. */
function defaultDataDir(configDir: string, id: number): string {
  return resolve(dirname(resolve(configDir)), '.data', `controller-${id}`);
}
