// The xcecd process itself: flags, registration, a job to its output file, graceful SIGTERM.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WebSocket } from 'ws';
import { formatHostCredential } from './keys.js';
import { standInCredential, standInWorkerServer } from '../testing/worker-stand-in.js';
import { parseWorkerFrame, type StatusFrame, type WorkerToControllerFrame } from './worker-protocol.js';
import { scratchDir, startInfo, waitFor as waitForUpTo } from '../testing/worker-fixtures.js';

const XCECD = fileURLToPath(new URL('./xcecd.js', import.meta.url));

/** The fake leader and xcecd are separate processes: waits get 8 s. */
const waitFor = (what: string, cond: () => boolean): Promise<void> => waitForUpTo(what, cond, 8_000);

test('xcecd registers with the resources of its flags, runs a job to its output file and stops cleanly on SIGTERM', async () => {
  const dir = scratchDir('xcecd-');
  writeFileSync(join(dir, 'h7.credential'), formatHostCredential(standInCredential('h7')), { mode: 0o600 });
  const frames: WorkerToControllerFrame[] = [];
  let conn: WebSocket | null = null;
  const server = await standInWorkerServer((ws) => {
    conn = ws;
    ws.on('message', (d) => {
      const f = parseWorkerFrame(d.toString());
      frames.push(f);
      if (f.type === 'register') ws.send(JSON.stringify({ type: 'registered', leaderId: 1, heartbeat_ms: 200 }));
      if (f.type === 'status') ws.send(JSON.stringify({ type: 'status-ack', statusId: f.statusId }));
    });
  });
  const child = spawn(
    process.execPath,
    [
      XCECD,
      '--host',
      'h7',
      '--controllers',
      server.address,
      '--slots',
      '4',
      '--mem',
      '8G',
      '--bool',
      'ib,x86_64',
      '--num',
      'gpu=2',
      '--state-dir',
      join(dir, 'state'),
      '--credential-file',
      join(dir, 'h7.credential'),
      '--insecure-dev',
      '--kill-grace',
      '1s',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, XCE_LOG_LEVEL: 'warn' } },
  );
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  try {
    await waitFor('register', () => frames.some((f) => f.type === 'register'));
    const reg = frames.find((f) => f.type === 'register');
    assert.deepEqual(reg?.type === 'register' && reg.resources, {
      slots: 4,
      mem_bytes: 8 * 1024 ** 3,
      booleans: ['ib', 'x86_64'],
      numerics: { gpu: 2 },
    });
    const info = startInfo(dir, {
      profile: 'python',
      profileLabel: 'python@0a1b2c',
      command: ['echo', 'hello'],
      hosts: [{ host: 'h7', tasks: 1 }],
    });
    (conn as WebSocket | null)?.send(JSON.stringify({ type: 'start', startInfo: info }));
    await waitFor('job 1 finished', () => frames.some((f) => f.type === 'status' && f.kind === 'finished'));
    assert.equal(readFileSync(join(dir, 'xce-1.out'), 'utf8'), 'hello\n');
    (conn as WebSocket | null)?.send(
      JSON.stringify({ type: 'start', startInfo: { ...info, jobId: 2, command: ['sleep', '30'] } }),
    );
    await waitFor('job 2 started', () =>
      frames.some((f) => f.type === 'status' && f.jobId === 2 && f.kind === 'started'),
    );
    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
    const fin = frames.find((f): f is StatusFrame => f.type === 'status' && f.jobId === 2 && f.kind === 'finished');
    assert.deepEqual([fin?.signal, fin?.reason], ['SIGTERM', 'xcecd on host h7 is shutting down']);
    const saved = JSON.parse(readFileSync(join(dir, 'state', 'xcecd-state.json'), 'utf8')) as {
      statuses: unknown[];
      runs: unknown[];
    };
    assert.deepEqual([saved.statuses, saved.runs], [[], []]);
  } finally {
    child.kill('SIGKILL');
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('xcecd refuses a bad flag with a message naming it and exit code 2', async () => {
  const child = spawn(process.execPath, [XCECD, '--host', 'h1', '--controllers', '127.0.0.1:1', '--mem', 'lots'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  assert.equal(code, 2);
  assert.match(stderr, /xcecd: --mem: bad size "lots"/);
});
