// xcecli and xceadmin as a user runs them: real processes against a real controller, with the
// token in a private config directory and exit codes a script can rely on.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { TestCluster, repoRoot } from '../harness/cluster.js';
import { cliHome, runCli, type CliRun } from '../testing/e2e.js';
import { makeDevTls } from '../harness/dev-tls.js';

/** The build this test is part of (`dist/`, or another `--outDir`): the CLIs run are its own. */
const dist = new URL('../', import.meta.url).pathname;

let cluster: TestCluster;
let home: string;

before(async () => {
  cluster = await TestCluster.start({ controllers: 1 });
  home = cliHome('cli');
});
after(async () => {
  await cluster.stop();
});

const NPM_TEST_BUILD = resolve(dist) === resolve(repoRoot, 'dist');

test(
  'the commands package.json names run as programs, as `npx xcecli` runs them (the build leaves them executable)',
  {
    skip: NPM_TEST_BUILD
      ? false
      : 'a private build (--outDir): npm test, npm start and npm run build make dist/ executable',
  },
  () => {
    const bins = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> })
      .bin;
    assert.deepEqual(Object.keys(bins).sort(), ['xceadmin', 'xcecd', 'xcecli', 'xcectld']);
    for (const target of Object.values(bins))
      assert.ok((statSync(join(repoRoot, target)).mode & 0o111) !== 0, `${target} is not executable`);
    const r = spawnSync(join(repoRoot, bins['xcecli']!), ['--help'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /xcecli/);
  },
);

const run = (bin: 'xcecli' | 'xceadmin', args: string[], input?: string): CliRun =>
  runCli(cluster, home, bin, args, input);

test('login stores a private token; submit, list and show work; refusals and usage errors have their own exit codes', () => {
  assert.equal(run('xcecli', ['jobs', 'list']).code, 3, 'not logged in: exit 3');
  const login = run('xcecli', ['login', '-u', 'alice', '--password-stdin'], 'alice-dev\n');
  assert.equal(login.code, 0, login.err);
  assert.equal(statSync(join(home, 'token')).mode & 0o777, 0o600);
  assert.equal(statSync(join(home, 'refresh-token')).mode & 0o777, 0o600);
  const sub = run('xcecli', ['jobs', 'submit', '--app', 'python', '--', 'echo', 'hi']);
  assert.equal(sub.code, 0, sub.err);
  assert.match(sub.out, /Job <(\d+)> is submitted to queue <normal> with application profile <python>\./);
  const id = /Job <(\d+)>/.exec(sub.out)![1]!;
  const list = run('xcecli', ['--json', 'jobs', 'list']);
  assert.equal(list.code, 0);
  assert.ok((JSON.parse(list.out) as { jobs: Array<{ id: number }> }).jobs.some((j) => String(j.id) === id));
  const show = run('xcecli', ['jobs', 'show', id]);
  assert.match(show.out, /Profile +python +python@[0-9a-f]{6}/);
  assert.match(show.out, /select\[x86_64\] +profile/);
  const bad = run('xcecli', ['jobs', 'submit', '--app', 'openfoam', '-R', 'rusage[license_foam=2]', '--', 'x']);
  assert.equal(bad.code, 1);
  assert.equal(bad.err.trim().split('\n').length, 1, 'one clear line');
  assert.match(
    bad.err,
    /job sets rusage\[license_foam=2\] but application profile openfoam requires rusage\[license_foam=1\]/,
  );
  const usage = run('xcecli', ['jobs', 'submit', '-n', 'lots', '--', 'x']);
  assert.equal(usage.code, 2);
  assert.match(usage.err, /-n must be a positive integer, got "lots"/);
  const dry = run('xcecli', ['jobs', 'submit', '--app', 'openfoam', '-n', '64', '--dry-run', '--', 'x']);
  assert.equal(dry.code, 0, dry.err);
  assert.match(dry.out, /Dry run: nothing was submitted/);
  assert.match(dry.out, /rusage\[license_foam=1\] +profile/);
});

test('xceadmin: config build offline, cluster status and a refused upgrade', () => {
  const build = run('xceadmin', ['config', 'build', join(repoRoot, 'configs')]);
  assert.equal(build.code, 0, build.err + build.out);
  assert.equal(
    (build.out + build.err).match(/: warning: /g)?.length,
    2,
    'the two deprecation warnings of the night queue',
  );
  assert.match(build.out + build.err, /0 errors, 2 warnings/);
  assert.equal(run('xcecli', ['login', '-u', 'admin', '--password-stdin'], 'admin-dev\n').code, 0);
  const status = run('xceadmin', ['cluster', 'status']);
  assert.equal(status.code, 0, status.err);
  assert.match(status.out, /Leader 1 .* term \d+/);
  const bad = mkdtempSync(join(tmpdir(), 'xce-bad-config-'));
  spawnSync('sh', [
    '-c',
    `cp ${cluster.configDir}/*.yaml ${bad}/ && sed -i 's/default_application: python/default_application: nosuch/' ${bad}/xce.yaml`,
  ]);
  const up = run('xceadmin', ['config', 'upgrade', bad]);
  assert.equal(up.code, 1);
  assert.match(up.err, /nosuch/);
});

test('xceadmin cluster add-member of an existing voter is refused at once as already a voter (not retried as unavailable)', () => {
  assert.equal(run('xcecli', ['login', '-u', 'admin', '--password-stdin'], 'admin-dev\n').code, 0);
  const add = run('xceadmin', ['cluster', 'add-member', '1', cluster.address(1)]);
  assert.equal(add.code, 1, `exit 1 (refused); got ${add.code}: ${add.err}`);
  assert.match(add.err, /already a voter/);
  // Refused at once: a retried call ends with the client's "(gave up after N ms)".
  assert.doesNotMatch(add.err, /gave up after/);
});

test('xcecli refuses a controller whose certificate another CA signed, saying so; plain ws only when told', () => {
  const other = makeDevTls(join(mkdtempSync(join(tmpdir(), 'xce-other-ca-')), 'tls'), 'another');
  const r = spawnSync(
    process.execPath,
    [join(dist, 'cli', 'xcecli.js'), '--timeout', '3', 'login', '-u', 'alice', '--password-stdin'],
    {
      input: 'alice-dev\n',
      encoding: 'utf8',
      env: {
        ...process.env,
        XCE_CONFIG_DIR: home,
        XCE_CONTROLLERS: cluster.addresses().join(','),
        NO_COLOR: '1',
        XCE_CA_FILE: other.caFile,
      },
      timeout: 30_000,
    },
  );
  assert.notEqual(r.status, 0, 'a certificate of another CA is refused');
  assert.match(r.stderr, /certificate/i, r.stderr);
  // Plain ws to a TLS port gets no answer either: a client never falls back to clear text by itself.
  const plain = spawnSync(process.execPath, [join(dist, 'cli', 'xcecli.js'), '--timeout', '2', 'apps', 'list'], {
    encoding: 'utf8',
    env: {
      ...process.env,
      XCE_CONFIG_DIR: home,
      XCE_CONTROLLERS: cluster.addresses().join(','),
      NO_COLOR: '1',
      XCE_INSECURE_DEV: '1',
    },
    timeout: 30_000,
  });
  assert.notEqual(plain.status, 0);
});
