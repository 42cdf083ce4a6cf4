import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SettingsError, readToken, resolveControllers, saveToken } from './settings.js';
import { table, exitCodeFor, EXIT } from './output.js';
import { ApiError } from './client.js';

test('controllers come from the flag, then XCE_CONTROLLERS, then the config file, then the dev default', () => {
  const dir = mkdtempSync(join(tmpdir(), 'xce-settings-'));
  const env = { XCE_CONFIG_DIR: dir } as NodeJS.ProcessEnv;
  assert.deepEqual(resolveControllers('a:1,b:2', env), ['a:1', 'b:2']);
  assert.deepEqual(resolveControllers(undefined, { ...env, XCE_CONTROLLERS: 'c:3 d:4' }), ['c:3', 'd:4']);
  assert.deepEqual(resolveControllers(undefined, env), ['127.0.0.1:7101']);
  writeFileSync(join(dir, 'config.yaml'), 'controllers: [e:5]\n');
  assert.deepEqual(resolveControllers(undefined, env), ['e:5']);
  writeFileSync(join(dir, 'config.yaml'), 'controllers: 7\n');
  assert.throws(
    () => resolveControllers(undefined, env),
    (e: unknown) => e instanceof SettingsError && /config\.yaml: controllers must be a list/.test(e.message),
  );
});

test('the token is stored with mode 0600 and read back', () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'xce-token-')), 'nested');
  mkdirSync(dir);
  const env = { XCE_CONFIG_DIR: dir } as NodeJS.ProcessEnv;
  const file = saveToken('abc.def.ghi', env);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(readToken(env), 'abc.def.ghi');
  assert.equal(readToken({ ...env, XCE_TOKEN: 'env-token' }), 'env-token');
});

test('tables align columns and exit codes follow the error kind', () => {
  assert.equal(
    table(
      ['ID', 'STATE'],
      [
        ['1', 'PEND'],
        ['1234', 'RUN'],
      ],
    ),
    'ID    STATE\n1     PEND\n1234  RUN\n',
  );
  assert.equal(exitCodeFor(new ApiError('rejected', 'x')), EXIT.refused);
  assert.equal(exitCodeFor(new ApiError('unauthenticated', 'x')), EXIT.auth);
  assert.equal(exitCodeFor(new ApiError('unreachable', 'x')), EXIT.unavailable);
  assert.equal(exitCodeFor(new ApiError('rate-limited', 'x')), EXIT.unavailable);
  assert.equal(exitCodeFor(new Error('boom')), EXIT.internal);
});
