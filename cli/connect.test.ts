import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseTimeout_s, stallMessage, TIMEOUT_S_DEFAULT } from './connect.js';
import { cliProgram, runCli } from './xcecli-program.js';
import { adminProgram } from './admin/program.js';
import { EXIT } from './output.js';

/** Runs xcecli in this process with `args`, its stderr captured; an empty config directory, no token. */
async function xcecli(args: string[]): Promise<{ code: number; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'xce-connect-'));
  const saved = { config: process.env['XCE_CONFIG_DIR'], token: process.env['XCE_TOKEN'] };
  const write = process.stderr.write;
  let stderr = '';
  process.env['XCE_CONFIG_DIR'] = dir;
  delete process.env['XCE_TOKEN'];
  process.stderr.write = ((chunk: string | Uint8Array) => {
    stderr += chunk.toString();
    return true;
  }) as typeof process.stderr.write;
  try {
    return { code: await runCli(['node', 'xcecli', ...args]), stderr };
  } finally {
    process.stderr.write = write;
    if (saved.config === undefined) delete process.env['XCE_CONFIG_DIR'];
    else process.env['XCE_CONFIG_DIR'] = saved.config;
    if (saved.token !== undefined) process.env['XCE_TOKEN'] = saved.token;
    rmSync(dir, { recursive: true, force: true });
  }
}

test('--timeout takes a positive number of seconds', () => {
  assert.equal(parseTimeout_s(undefined), undefined);
  assert.equal(parseTimeout_s('5'), 5);
  assert.equal(parseTimeout_s('0.5'), 0.5);
  assert.equal(parseTimeout_s('86400'), 86_400);
});

test('a bad --timeout is named with what it must be', () => {
  for (const bad of ['abc', '0', '-3', '', '1s', 'Infinity', '0x10'])
    assert.throws(
      () => parseTimeout_s(bad),
      new RegExp(`^SettingsError: --timeout must be a positive number of seconds, got ${JSON.stringify(bad)}$`),
    );
  assert.throws(() => parseTimeout_s('90000'), /--timeout must be at most 86400 seconds \(a day\), got "90000"/);
});

test('xcecli --timeout abc exits 2 naming the flag and the value', async () => {
  const r = await xcecli(['--timeout', 'abc', 'jobs', 'list']);
  assert.equal(r.code, EXIT.usage);
  assert.equal(r.stderr, 'xcecli: --timeout must be a positive number of seconds, got "abc"\n');
});

test('xcecli and xceadmin show --timeout and its default in --help', () => {
  for (const help of [cliProgram({ code: 0 }).helpInformation(), adminProgram().helpInformation()]) {
    assert.match(help, /--timeout <seconds>/);
    assert.match(help, new RegExp(`\\(default: ${TIMEOUT_S_DEFAULT}\\)`));
  }
});

test('the stall line names every address tried and the deadline', () => {
  assert.equal(
    stallMessage('xcecli', { addresses: ['ctl1:7101', 'ctl2:7101'], waited_ms: 2_000, deadline_ms: 30_000 }),
    'xcecli: no controller has answered for 2 s; trying ctl1:7101, ctl2:7101 ' +
      '(giving up after 30 s; --timeout SECONDS changes that)\n',
  );
});

test('xcecli against an address nothing listens on says what it is trying, then gives up at --timeout', async () => {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const dead = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  await new Promise((r) => server.close(r));
  const r = await xcecli(['--controllers', dead, 'apps', 'list', '--timeout', '3']);
  assert.equal(r.code, EXIT.unavailable, r.stderr);
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(
    lines[0],
    `xcecli: no controller has answered for 2 s; trying ${dead} (giving up after 3 s; --timeout SECONDS changes that)`,
  );
  assert.match(lines[1] ?? '', new RegExp(`^xcecli: cannot reach wss://${dead}/api.*\\(gave up after 3000 ms\\)$`));
  assert.equal(lines.length, 2, r.stderr);
});
