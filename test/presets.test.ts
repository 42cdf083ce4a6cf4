// Presets end to end, as a user and an admin meet them: real controllers, real xcecli and xceadmin
// processes, a user's presets folder under $XDG_CONFIG_HOME. A site preset deployed with the
// configuration is listed by a fresh client, used by --preset and shown with its origin by
// --dry-run; the admin changes it with `config upgrade` and `presets diff` shows the change; a
// profile change that forbids a preset's value is reported by `presets check` and by the submit.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestCluster } from '../harness/cluster.js';

const dist = new URL('../', import.meta.url).pathname;

let cluster: TestCluster;
let userHome: string;
let adminHome: string;

before(async () => {
  cluster = await TestCluster.start({ controllers: 3 });
  userHome = mkdtempSync(join(tmpdir(), 'xce-presets-user-'));
  adminHome = mkdtempSync(join(tmpdir(), 'xce-presets-admin-'));
});
after(async () => {
  await cluster.stop();
});

function run(
  home: string,
  bin: 'xcecli' | 'xceadmin',
  args: string[],
  opts: { input?: string; controllers?: string } = {},
) {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    XDG_CONFIG_HOME: home,
    XCE_CONTROLLERS: opts.controllers ?? cluster.addresses().join(','),
    NO_COLOR: '1',
    ...cluster.clientEnv(),
  };
  delete env['XCE_CONFIG_DIR'];
  delete env['XCE_TOKEN'];
  const r = spawnSync(process.execPath, [join(dist, 'cli', `${bin}.js`), ...args], {
    input: opts.input,
    encoding: 'utf8',
    env,
    timeout: 60_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}
const user = (args: string[], controllers?: string) =>
  run(userHome, 'xcecli', args, controllers ? { controllers } : {});
const admin = (bin: 'xcecli' | 'xceadmin', args: string[]) => run(adminHome, bin, args);

function editConfig(file: string, edit: (text: string) => string): void {
  const path = join(cluster.configDir, file);
  const before = readFileSync(path, 'utf8');
  const after = edit(before);
  assert.notEqual(after, before, `the edit of ${file} changed nothing`);
  writeFileSync(path, after);
}

const CFD_BIG = `name: cfd-big
description: "OpenFOAM, 128 tasks on the night queue"
app: openfoam
queue: night
tasks: 128
resreq: "span[ptile=32]"
env: { FOAM_RUN: big }
`;

test('a fresh client lists the site preset; --preset expands it, --dry-run names each origin, the submit carries the values', () => {
  const login = run(userHome, 'xcecli', ['login', '-u', 'alice', '--password-stdin'], { input: 'alice-dev\n' });
  assert.equal(login.code, 0, login.err);
  assert.ok(existsSync(join(userHome, 'xce', 'token')), 'the token is under $XDG_CONFIG_HOME/xce');

  const list = user(['--json', 'presets', 'list']);
  assert.equal(list.code, 0, list.err);
  const rows = (JSON.parse(list.out) as { presets: Array<{ name: string; source: string; label: string }> }).presets;
  const site = rows.find((r) => r.name === 'openfoam' && r.source === 'site');
  assert.ok(site, list.out);
  assert.match(site.label, /^openfoam@[0-9a-f]{6}$/);
  const human = user(['presets', 'list']);
  assert.match(human.out, /openfoam +site +openfoam@[0-9a-f]{6} +openfoam/);

  const dry = user(['jobs', 'submit', '--preset', 'openfoam', '--dry-run', '--', './run.sh']);
  assert.equal(dry.code, 0, dry.err);
  assert.match(dry.out, /-n 64 +\(preset openfoam, site\)/);
  assert.match(dry.out, /--app openfoam +\(preset openfoam, site\)/);
  assert.match(dry.out, /rusage\[license_foam=1\] +profile/, 'the profile origins are shown too');

  mkdirSync(join(userHome, 'xce', 'presets'), { recursive: true });
  writeFileSync(join(userHome, 'xce', 'presets', 'cfd-big.yaml'), CFD_BIG);
  const stacked = user([
    '--json',
    ...['jobs', 'submit', '--preset', 'openfoam', '--preset', 'cfd-big', '-n', '96', '--dry-run', '--', './run.sh'],
  ]);
  assert.equal(stacked.code, 0, stacked.err);
  const origins = (
    JSON.parse(stacked.out) as { presetOrigins: Array<{ option: string; value: string; origin: string }> }
  ).presetOrigins;
  const origin = (option: string) => origins.find((o) => o.option === option);
  assert.deepEqual(origin('-n'), { option: '-n', field: 'tasks', value: '96', origin: 'command line' });
  assert.equal(origin('-q')?.origin, 'preset cfd-big, user');
  assert.equal(origin('-R')?.value, 'span[ptile=32]', 'a later preset replaces -R as a whole');
  assert.equal(origin('-e FOAM_SIGFPE')?.origin, 'preset openfoam, site', 'env merges per variable');
  assert.equal(origin('-e FOAM_RUN')?.origin, 'preset cfd-big, user');

  const showCfd = JSON.parse(user(['--json', 'presets', 'show', 'cfd-big']).out) as {
    values: Array<{ option: string; value: string; origin: string }>;
  };
  assert.deepEqual(
    showCfd.values.find((v) => v.option === '-n'),
    { option: '-n', value: '128', origin: 'preset cfd-big, user' },
  );
  assert.match(user(['presets', 'show', 'openfoam']).out, /-n +64 +preset openfoam, site/);

  const sub = user(['--json', 'jobs', 'submit', '--preset', 'openfoam', '--preset', 'cfd-big', '--', './run.sh']);
  assert.equal(sub.code, 0, sub.err);
  const id = String((JSON.parse(sub.out) as { jobId: number }).jobId);
  const show = JSON.parse(user(['--json', 'jobs', 'show', id]).out) as { queue: string; tasks: number };
  assert.equal(show.queue, 'night');
  assert.equal(show.tasks, 128);
});

test('the admin changes a site preset with config upgrade; presets diff shows it against the pulled copy', () => {
  const pull = user(['presets', 'pull', 'openfoam']);
  assert.equal(pull.code, 0, pull.err);
  assert.match(
    readFileSync(join(userHome, 'xce', 'presets', 'openfoam.yaml'), 'utf8'),
    /^# pulled from site preset openfoam@/,
  );
  assert.equal(user(['presets', 'pull', 'openfoam']).code, 2, 'no overwrite without --force');
  const forced = user(['--json', 'presets', 'pull', 'openfoam', '--force']);
  assert.equal(forced.code, 0, forced.err);
  assert.match((JSON.parse(forced.out) as { label: string }).label, /^openfoam@[0-9a-f]{6}$/);
  assert.equal(user(['presets', 'diff', 'openfoam']).code, 0, 'the fresh copy is the same');
  const shadow = JSON.parse(user(['--json', 'presets', 'list']).out) as {
    presets: Array<{ name: string; source: string; shadowsSite: boolean }>;
  };
  assert.ok(shadow.presets.some((p) => p.name === 'openfoam' && p.source === 'user' && p.shadowsSite));

  const login = run(adminHome, 'xcecli', ['login', '-u', 'admin', '--password-stdin'], { input: 'admin-dev\n' });
  assert.equal(login.code, 0, login.err);
  editConfig(join('presets', 'openfoam.yaml'), (t) => t.replace('tasks: 64', 'tasks: 128'));
  const up = admin('xceadmin', ['config', 'upgrade', cluster.configDir]);
  assert.equal(up.code, 0, up.err);

  const diff = user(['presets', 'diff', 'openfoam']);
  assert.equal(diff.code, 1, diff.err + diff.out);
  assert.match(diff.out, /-n +64 +128/);
  assert.match(diff.out, /pulled from openfoam@[0-9a-f]{6}; the site version is now openfoam@[0-9a-f]{6}/);
  const json = JSON.parse(user(['--json', 'presets', 'diff', 'openfoam']).out) as { changes: unknown[] };
  assert.deepEqual(json.changes, [{ option: '-n', user: '64', site: '128' }]);
  // Every controller serves the new version (the presets ride in the replicated configuration).
  const labels = cluster.addresses().map((a) => {
    const r = JSON.parse(user(['--json', 'presets', 'list'], a).out) as {
      presets: Array<{ name: string; label: string }>;
    };
    return r.presets.find((p) => p.name === 'openfoam')?.label;
  });
  assert.equal(new Set(labels).size, 1, labels.join(' '));
});

test('a profile change that forbids a preset value: presets check reports it, the submit is refused naming the profile value', () => {
  editConfig('applications.yaml', (t) =>
    t.replace(
      'resreq: "select[ib] rusage[license_foam=1]"',
      'resreq: "select[ib] rusage[license_foam=1] span[ptile=16]"',
    ),
  );
  const up = admin('xceadmin', ['config', 'upgrade', cluster.configDir]);
  assert.equal(up.code, 0, up.err);
  assert.match(up.out, /warning: presets\/openfoam\.yaml openfoam resreq: conflicts with application profile openfoam/);

  const check = user(['presets', 'check']);
  assert.equal(check.code, 1, check.err + check.out);
  assert.match(check.out, /refused +preset cfd-big \(user\): .*application profile openfoam requires span\[ptile=16\]/);
  const ok = JSON.parse(user(['--json', 'presets', 'check']).out) as { checks: Array<{ name: string; ok: boolean }> };
  assert.equal(ok.checks.find((c) => c.name === 'cfd-big')?.ok, false);

  const sub = user(['jobs', 'submit', '--preset', 'cfd-big', '--', './run.sh']);
  assert.equal(sub.code, 1, sub.err);
  assert.match(sub.err, /job sets span\[ptile=32\] but application profile openfoam requires span\[ptile=16\]/);
});

test('a bad user preset file is refused by the client, naming file, entry and field; nothing reaches a controller', () => {
  const dir = join(userHome, 'xce', 'presets');
  writeFileSync(join(dir, 'bad.yaml'), 'name: bad\ntaskz: 4\nenv: { XCE_JOB: x }\n');
  // A port nothing listens on: the refusal comes before any connection.
  const sub = user(['jobs', 'submit', '--preset', 'bad', '--', './run.sh'], '127.0.0.1:9');
  assert.equal(sub.code, 2, sub.err);
  assert.match(sub.err, /bad\.yaml:2:1: error: bad: taskz: unknown key "taskz"; did you mean "tasks"\?/);
  assert.match(sub.err, /bad\.yaml:3:8: error: bad: env\.XCE_JOB: .*XCE_ prefix is reserved/);
  assert.doesNotMatch(sub.err, /unreachable|connect/i);
  const check = user(['presets', 'check']);
  assert.equal(check.code, 1);
  assert.match(check.out, /bad\.yaml:2:1: error: bad: taskz/);
});

test('--help of every presets command', () => {
  for (const cmd of ['list', 'show', 'diff', 'pull', 'check']) {
    const h = user(['presets', cmd, '--help']);
    assert.equal(h.code, 0, `${cmd}: ${h.err}`);
    assert.match(h.out, new RegExp(`Usage: xcecli presets ${cmd}`));
  }
  assert.match(user(['jobs', 'submit', '--help']).out, /--preset <name>/);
});
