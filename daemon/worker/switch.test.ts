import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIXED_PATH, type Env, type ExecIdentity } from './env.js';
import { selfIdentity, workerIsRoot } from './identity.js';
import { WRAPPER_FAILED_EXIT } from './job-run.js';
import { findExecutable } from './launch.js';
import {
  envScript,
  isRootUnsafe,
  LAYER_ENV_CARRIER,
  LAYER_ENV_CARRIER_BYTES_MAX,
  layerSpawn,
  shellQuote,
  SWITCH_FAILED_EXIT,
  type LayerSpawn,
} from './switch.js';

const ROOT = workerIsRoot();
const NOT_ROOT = 'only a root worker switches identity; this test runs as a normal user';

/** A test that needs a root worker and setpriv (util-linux); without setpriv it has nothing to check. */
function rootTestWithSetpriv(name: string, body: (setpriv: string) => void): void {
  test(name, { skip: ROOT ? false : NOT_ROOT }, () => {
    const setpriv = findExecutable('setpriv', FIXED_PATH);
    if (setpriv !== null) body(setpriv);
  });
}
const NOBODY: ExecIdentity = { name: 'nobody', uid: 65534, gid: 65534, home: '/nonexistent', switchUser: true };
const SETPRIV = '/usr/bin/setpriv';
const NASTY = `it's "quoted" $(touch /tmp/xce-pwned) \`id\` \\ back\\slash\nsecond line\t€ ${'x'.repeat(10)}`;

/** Runs a spawn plan for real, printing the final environment NUL-separated. */
function runPlan(plan: LayerSpawn): { status: number | null; env: Env; stderr: string } {
  const r = spawnSync(plan.file, plan.args as string[], {
    env: plan.env,
    ...(plan.ids ?? {}),
    encoding: 'utf8',
    cwd: '/',
  });
  const env: Env = {};
  for (const kv of r.stdout.split('\0')) {
    if (kv === '') continue;
    const i = kv.indexOf('=');
    env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return { status: r.status, env, stderr: r.stderr };
}

test('the glibc loader variables are recognised as unsafe for root, ordinary ones are not', () => {
  for (const n of [
    'LD_PRELOAD',
    'LD_LIBRARY_PATH',
    'LD_DEBUG_OUTPUT',
    'LD_AUDIT',
    'GCONV_PATH',
    'LOCPATH',
    'NLSPATH',
    'HOSTALIASES',
    'RESOLV_HOST_CONF',
    'MALLOC_TRACE',
    'GLIBC_TUNABLES',
  ]) {
    assert.equal(isRootUnsafe(n), true, n);
  }
  for (const n of ['PATH', 'HOME', 'OMP_NUM_THREADS', 'LANG', 'XLD_PRELOAD']) assert.equal(isRootUnsafe(n), false, n);
});

test('a single-quoted shell word gives back any text exactly', () => {
  const r = spawnSync('/bin/sh', ['-c', `printf %s ${shellQuote(NASTY)}`], { encoding: 'utf8' });
  assert.equal(r.stdout, NASTY);
});

test('with setpriv, root starts with a fixed environment and no value of the layer in its argv', () => {
  const env = { PATH: '/opt/x/bin', LD_PRELOAD: '/tmp/evil.so', SECRET: 'hunter2' };
  const plan = layerSpawn(NOBODY, SETPRIV, ['/bin/sh', '-c', 'true'], env);
  assert.equal(plan.file, SETPRIV);
  assert.equal(plan.ids, null);
  assert.deepEqual(Object.keys(plan.env), ['PATH', `${LAYER_ENV_CARRIER}0`]);
  assert.equal(plan.env['PATH'], FIXED_PATH);
  assert.deepEqual(plan.args.slice(0, 4), ['--reuid=65534', '--regid=65534', '--init-groups', '--']);
  assert.ok(
    !plan.args.some((a) => a.includes('hunter2') || a.includes('evil.so')),
    '/proc/<pid>/cmdline is readable by every user',
  );
});

test('without setpriv the child drops to the user before it execs, with the layer environment', () => {
  const env = { PATH: FIXED_PATH, LD_PRELOAD: '/tmp/x.so' };
  assert.deepEqual(layerSpawn(NOBODY, null, ['/bin/true'], env), {
    file: '/bin/true',
    args: [],
    env,
    ids: { uid: 65534, gid: 65534 },
    dropped: [],
  });
});

test('a layer that runs as uid 0 never gets the loader variables', () => {
  const self: ExecIdentity = { name: 'root', uid: 0, gid: 0, home: '/root', switchUser: false };
  const plan = layerSpawn(self, null, ['/bin/true'], {
    PATH: FIXED_PATH,
    LD_PRELOAD: '/x.so',
    MALLOC_CHECK_: '3',
    GCONV_PATH: '/tmp',
    OK: '1',
  });
  assert.deepEqual(plan.env, { PATH: FIXED_PATH, OK: '1' });
  assert.deepEqual(plan.dropped, ['LD_PRELOAD', 'MALLOC_CHECK_', 'GCONV_PATH']);
});

test('an environment larger than one carrier is split over several', () => {
  const env: Env = {};
  for (let i = 0; i < 40; i++) env[`V${i}`] = 'y'.repeat(10_000);
  const chunks = envScript(env);
  assert.ok(chunks.length >= 4, `${chunks.length} chunks`);
  assert.ok(chunks.every((c) => Buffer.byteLength(c) <= LAYER_ENV_CARRIER_BYTES_MAX));
  assert.throws(() => envScript({ 'A;rm -rf ~;B': '1' }), /not a shell name/);
});

test("the restore failure exit code is the wrappers' launch failure code", () => {
  assert.equal(SWITCH_FAILED_EXIT, WRAPPER_FAILED_EXIT);
});

rootTestWithSetpriv(
  'through setpriv the layer runs as the user with exactly its environment, however large or strange',
  (setpriv) => {
    const env: Env = { PATH: FIXED_PATH, HOME: '/nonexistent', NASTY, EMPTY: '' };
    for (let i = 0; i < 30; i++) env[`BIG${i}`] = String(i).repeat(8_000);
    const r = runPlan(layerSpawn(NOBODY, setpriv, ['/bin/sh', '-c', 'id -u >&2; exec env -0'], env));
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr.trim(), '65534');
    delete r.env['PWD']; // the shell's own
    assert.deepEqual(r.env, env);
  },
);

rootTestWithSetpriv(
  "through setpriv a loader variable of the layer is honoured only by the user's processes",
  (setpriv) => {
    const rootOnly = mkdtempSync(join(tmpdir(), 'xce-switch-'));
    chmodSync(rootOnly, 0o700);
    try {
      const r = runPlan(
        layerSpawn(NOBODY, setpriv, ['/bin/true'], {
          PATH: FIXED_PATH,
          LD_DEBUG: 'files',
          LD_DEBUG_OUTPUT: join(rootOnly, 'ld'),
        }),
      );
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(readdirSync(rootOnly), []);
    } finally {
      rmSync(rootOnly, { recursive: true, force: true });
    }
  },
);

test('a worker that is not root runs layers as itself with the environment unchanged', () => {
  const self = selfIdentity();
  if (self.uid === 0) return; // covered by the uid-0 case above
  const env = { PATH: FIXED_PATH, LD_PRELOAD: '' };
  assert.deepEqual(layerSpawn(self, null, ['/bin/true'], env).env, env);
});

rootTestWithSetpriv(
  'a layer that is a shell program runs in the shell that restored its environment: one exec, its own $0 and arguments',
  (setpriv) => {
    const env: Env = { PATH: FIXED_PATH, IFS: '/', NASTY };
    const program = 'id -u >&2; printf "%s|" "$0" "$@" "$NASTY"; exec env -0 >/dev/null';
    const plan = layerSpawn(NOBODY, setpriv, ['/bin/sh', '-c', program, 'xce-job', 'a b', '/c/d'], env);
    assert.equal(plan.args.filter((a) => a === '/bin/sh').length, 1, 'one shell after setpriv');
    const r = spawnSync(plan.file, plan.args as string[], { env: plan.env, encoding: 'utf8', cwd: '/' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr.trim(), '65534');
    assert.equal(r.stdout, `xce-job|a b|/c/d|${NASTY}|`, 'an IFS from the environment splits none of the quoted words');
    const other = layerSpawn(NOBODY, setpriv, ['/usr/bin/env', '-0'], env);
    assert.equal(other.args.includes('xce-env'), true, "any other layer is exec'd by the restoring shell");
  },
);
