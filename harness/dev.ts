#!/usr/bin/env node
// `npm start` and `npm run cluster`: the embedded development setups, on 127.0.0.1 only, data in
// .data/ (dev/ or cluster/).
//   npm start        one controller and one worker (host `localhost`), from the shipped configs/
//                    with xce.yaml reduced to a single controller and hosts.yaml given `localhost`
//   npm run cluster  three controllers (configs/ as shipped) and two workers (node01, node02)
// Ctrl-C (or SIGTERM) stops every process it started, controllers last.
// It supervises them as systemd's Restart=always would: a process that dies is started again after
// RESTART_DELAY_MS (so `xceadmin drill --attach --allow-kill` can SIGKILL controllers), unless it
// died within START_GRACE_MS of starting START_FAILURES_MAX times in a row (a bad configuration,
// say), in which case everything stops. The command lines come from harness/launch.ts, as the
// test clusters' (harness/cluster.ts) do.

import type { ChildProcess } from 'node:child_process';
import { arch, cpus, totalmem } from 'node:os';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseCommandLine } from './cli-args.js';
import { makeDevTls } from './dev-tls.js';
import {
  configSecret,
  controllerArgs,
  repoRoot,
  shippedConfigDir,
  spawnDaemon,
  workerArgs,
  writeConfigCopy,
  writeHostCredential,
  type Daemon,
} from './launch.js';

const cluster =
  parseCommandLine(
    'dev',
    'node dist/harness/dev.js [--cluster]   (npm start / npm run cluster)\n' +
      '  (none)     one controller and one worker (host localhost), data in .data/dev\n' +
      '  --cluster  three controllers and two workers (node01, node02), data in .data/cluster',
    { cluster: { type: 'boolean' } },
  ).values.cluster === true;
const dataRoot = resolve(repoRoot, '.data', cluster ? 'cluster' : 'dev');
const children: Array<{ name: string; proc: ChildProcess; kind: Daemon }> = [];
const RESTART_DELAY_MS = 500;
const START_GRACE_MS = 3_000;
const START_FAILURES_MAX = 3;
const STOP_GRACE_MS = 15_000;
const color = process.stdout.isTTY && process.env['NO_COLOR'] === undefined;
const COLORS = ['\x1b[36m', '\x1b[35m', '\x1b[33m', '\x1b[32m', '\x1b[34m'];
/** The machine's own architecture as a hosts.yaml boolean resource. */
const ARCH = arch() === 'arm64' ? 'aarch64' : 'x86_64';

function prefixLines(name: string, i: number, stream: NodeJS.ReadableStream, out: NodeJS.WritableStream): void {
  let buf = '';
  const tag = color ? `${COLORS[i % COLORS.length]}${name.padEnd(8)}\x1b[0m` : name.padEnd(8);
  stream.on('data', (d: Buffer) => {
    buf += d.toString('utf8');
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      out.write(`${tag} ${buf.slice(0, nl)}\n`);
      buf = buf.slice(nl + 1);
    }
  });
}

function start(name: string, kind: Daemon, args: string[], slot = children.length, fastFailures = 0): void {
  const proc = spawnDaemon(kind, args, { logLevel: process.env['XCE_LOG_LEVEL'] ?? 'info' });
  const startedAt = Date.now();
  prefixLines(name, slot, proc.stdout!, process.stdout);
  prefixLines(name, slot, proc.stderr!, process.stderr);
  proc.on('exit', (code, signal) => {
    process.stderr.write(`${name} exited (${signal ?? `code ${code}`})\n`);
    if (stopping) return;
    const failures = Date.now() - startedAt < START_GRACE_MS ? fastFailures + 1 : 0;
    if (failures >= START_FAILURES_MAX) {
      process.stderr.write(
        `${name} died within ${START_GRACE_MS} ms of starting ${failures} times in a row: not restarting it; stopping everything (see its output above)\n`,
      );
      void stopAll(1);
      return;
    }
    process.stderr.write(`${name}: restarting in ${RESTART_DELAY_MS} ms\n`);
    setTimeout(() => {
      if (!stopping) start(name, kind, args, slot, failures);
    }, RESTART_DELAY_MS);
  });
  children[slot] = { name, proc, kind };
}

let stopping = false;
async function stopAll(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  const kill = (kind: Daemon) =>
    Promise.all(
      children
        .filter((c) => c.kind === kind && c.proc.exitCode === null && c.proc.signalCode === null)
        .map(
          (c) =>
            new Promise<void>((r) => {
              const t = setTimeout(() => c.proc.kill('SIGKILL'), STOP_GRACE_MS);
              c.proc.once('exit', () => {
                clearTimeout(t);
                r();
              });
              c.proc.kill('SIGTERM');
            }),
        ),
    );
  await kill('xcecd');
  await kill('xcectld');
  process.exit(code);
}
process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

mkdirSync(dataRoot, { recursive: true });
// The throw-away CA and controller certificate every dev link uses (configs/xce.yaml names them).
const tls = makeDevTls(resolve(repoRoot, '.data', 'tls'), 'xce-dev');
if (cluster) {
  const controllers = ['127.0.0.1:7101', '127.0.0.1:7102', '127.0.0.1:7103'];
  for (const id of [1, 2, 3])
    start(
      `ctl-${id}`,
      'xcectld',
      controllerArgs({ configDir: shippedConfigDir, id, dataDir: join(dataRoot, `controller-${id}`) }),
    );
  for (const host of ['node01', 'node02']) {
    start(
      host,
      'xcecd',
      workerArgs({
        host,
        controllers,
        slots: 8,
        mem: '16G',
        bools: ['ib', 'x86_64'],
        nums: { mem: 16384 },
        credentialFile: writeHostCredential(join(dataRoot, `${host}.credential`), configSecret(shippedConfigDir), host),
        caFile: tls.caFile,
        stateDir: join(dataRoot, `xcecd-${host}`),
        runAsSelf: true,
      }),
    );
  }
  process.stdout.write(
    '\nThree controllers on 127.0.0.1:7101-7103, workers node01 and node02. Ctrl-C stops them all.\n' +
      howTo(controllers.join(',')),
  );
} else {
  // The single-controller overlay of configs/: same profiles, queues and RBAC, and this machine as `localhost`.
  const configDir = join(dataRoot, 'config');
  const mem_mb = Math.floor(totalmem() / 2 ** 20);
  const secret = writeConfigCopy(configDir, {
    controllers: [{ id: 1, host: '127.0.0.1', port: 7101 }],
    tls,
    addHosts: [
      { name: 'localhost', slots: cpus().length, mem: `${mem_mb}M`, resources: [ARCH], numeric: { mem: mem_mb } },
    ],
  });
  start('ctl-1', 'xcectld', controllerArgs({ configDir, id: 1, dataDir: join(dataRoot, 'controller-1') }));
  start(
    'worker',
    'xcecd',
    workerArgs({
      host: 'localhost',
      controllers: ['127.0.0.1:7101'],
      credentialFile: writeHostCredential(join(dataRoot, 'localhost.credential'), secret, 'localhost'),
      caFile: tls.caFile,
      bools: [ARCH],
      stateDir: join(dataRoot, 'xcecd-localhost'),
      runAsSelf: true,
    }),
  );
  process.stdout.write(
    '\nOne controller on 127.0.0.1:7101 and one worker (host localhost). Ctrl-C stops both.\n' +
      howTo('127.0.0.1:7101'),
  );
}

function howTo(controllers: string): string {
  const tls = { caFile: resolve(repoRoot, '.data', 'tls', 'ca.pem') };
  return [
    'In another terminal:',
    `  export XCE_CONTROLLERS=${controllers}`,
    `  export XCE_CA_FILE=${tls.caFile}   # the dev cluster's throw-away CA (TLS)`,
    '  npx xcecli login -u alice            # password: alice-dev (dev users: see configs/users.yaml)',
    '  npx xcecli jobs submit --app python -- echo hello',
    '  npx xcecli jobs list',
    '  npx xcecli jobs show 1',
    '',
  ].join('\n');
}
