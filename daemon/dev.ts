#!/usr/bin/env node
// `npm start` and `npm run cluster`: the embedded development setups, on 127.0.0.1 only.
//   npm start        one controller and one worker (host `localhost`), from the shipped configs/
//                    with xce.yaml reduced to a single controller and hosts.yaml given `localhost`
//   npm run cluster  three controllers (configs/ as shipped) and two workers (node01, node02)
// Ctrl-C (or SIGTERM) stops every process it started, controllers last.
// It supervises them as systemd's Restart=always would: a process that dies is started again after
// RESTART_DELAY_MS (so `xceadmin drill --attach --allow-kill` can SIGKILL controllers), unless it
// died within START_GRACE_MS of starting START_FAILURES_MAX times in a row (a bad configuration,
// say), in which case everything stops.

import { spawn, type ChildProcess } from 'node:child_process';
import { cpus, totalmem, arch } from 'node:os';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';

const root = fileURLToPath(new URL('../../', import.meta.url));
const dist = join(root, 'dist');
const cluster = process.argv.includes('--cluster');
const dataRoot = resolve(root, '.data', cluster ? 'cluster' : 'dev');
const children: Array<{ name: string; proc: ChildProcess; kind: 'controller' | 'worker' }> = [];
const RESTART_DELAY_MS = 500;
const START_GRACE_MS = 3_000;
const START_FAILURES_MAX = 3;
const color = process.stdout.isTTY && process.env['NO_COLOR'] === undefined;
const COLORS = ['\x1b[36m', '\x1b[35m', '\x1b[33m', '\x1b[32m', '\x1b[34m'];

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

function start(
  name: string,
  kind: 'controller' | 'worker',
  script: string,
  args: string[],
  slot = children.length,
  fastFailures = 0,
): void {
  const proc = spawn(process.execPath, [join(dist, script), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, XCE_LOG_LEVEL: process.env['XCE_LOG_LEVEL'] ?? 'info' },
  });
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
      if (!stopping) start(name, kind, script, args, slot, failures);
    }, RESTART_DELAY_MS);
  });
  children[slot] = { name, proc, kind };
}

/** The single-controller overlay of configs/: same profiles, queues and RBAC. */
function singleControllerConfig(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const src = join(root, 'configs');
  for (const f of readdirSync(src).filter((n) => n.endsWith('.yaml'))) {
    const doc = parseDocument(readFileSync(join(src, f), 'utf8'));
    if (f === 'xce.yaml') doc.set('controllers', [{ id: 1, host: '127.0.0.1', port: 7101 }]);
    if (f === 'hosts.yaml') {
      const hosts = doc.get('hosts') as { add(v: unknown): void };
      const memMb = Math.floor(totalmem() / 2 ** 20);
      hosts.add(
        doc.createNode({
          name: 'localhost',
          slots: cpus().length,
          mem: `${memMb}M`,
          resources: [arch() === 'arm64' ? 'aarch64' : 'x86_64'],
          numeric: { mem: memMb },
        }),
      );
    }
    writeFileSync(join(dir, f), doc.toString());
  }
}

let stopping = false;
async function stopAll(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  const kill = (kind: 'controller' | 'worker') =>
    Promise.all(
      children
        .filter((c) => c.kind === kind && c.proc.exitCode === null && c.proc.signalCode === null)
        .map(
          (c) =>
            new Promise<void>((r) => {
              const t = setTimeout(() => c.proc.kill('SIGKILL'), 15_000);
              c.proc.once('exit', () => {
                clearTimeout(t);
                r();
              });
              c.proc.kill('SIGTERM');
            }),
        ),
    );
  await kill('worker');
  await kill('controller');
  process.exit(code);
}
process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

if (cluster) {
  const cfg = join(root, 'configs');
  for (const id of [1, 2, 3])
    start(`ctl-${id}`, 'controller', 'daemon/xcectld.js', [
      '--config',
      cfg,
      '--id',
      String(id),
      '--data',
      join(dataRoot, `controller-${id}`),
    ]);
  const secretFile = join(dataRoot, 'cluster.secret');
  const secret = parseDocument(readFileSync(join(cfg, 'xce.yaml'), 'utf8')).get('secret');
  mkdirSync(dataRoot, { recursive: true });
  writeFileSync(secretFile, String(secret), { mode: 0o600 });
  for (const host of ['node01', 'node02']) {
    start(host, 'worker', 'daemon/xcecd.js', [
      '--host',
      host,
      '--controllers',
      '127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103',
      '--slots',
      '8',
      '--mem',
      '16G',
      '--bool',
      'ib,x86_64',
      '--num',
      'mem=16384',
      '--secret-file',
      secretFile,
      '--state-dir',
      join(dataRoot, `xcecd-${host}`),
      '--run-as-self',
    ]);
  }
  process.stdout.write(
    '\nThree controllers on 127.0.0.1:7101-7103, workers node01 and node02. Ctrl-C stops them all.\n' +
      howTo('127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103'),
  );
} else {
  const cfg = join(dataRoot, 'config');
  singleControllerConfig(cfg);
  const secretFile = join(dataRoot, 'cluster.secret');
  writeFileSync(secretFile, String(parseDocument(readFileSync(join(cfg, 'xce.yaml'), 'utf8')).get('secret')), {
    mode: 0o600,
  });
  start('ctl-1', 'controller', 'daemon/xcectld.js', [
    '--config',
    cfg,
    '--id',
    '1',
    '--data',
    join(dataRoot, 'controller-1'),
  ]);
  start('worker', 'worker', 'daemon/xcecd.js', [
    '--host',
    'localhost',
    '--controllers',
    '127.0.0.1:7101',
    '--secret-file',
    secretFile,
    '--bool',
    arch() === 'arm64' ? 'aarch64' : 'x86_64',
    '--state-dir',
    join(dataRoot, 'xcecd-localhost'),
    '--run-as-self',
  ]);
  process.stdout.write(
    '\nOne controller on 127.0.0.1:7101 and one worker (host localhost). Ctrl-C stops both.\n' +
      howTo('127.0.0.1:7101'),
  );
}

function howTo(controllers: string): string {
  return [
    'In another terminal:',
    `  export XCE_CONTROLLERS=${controllers}`,
    '  npx xcecli login -u alice            # password: alice-dev (dev users: see configs/users.yaml)',
    '  npx xcecli jobs submit --app python -- echo hello',
    '  npx xcecli jobs list',
    '  npx xcecli jobs show 1',
    '',
  ].join('\n');
}
