// `xceadmin config build` as an admin runs it: the compiled CLI as a child process on the shipped
// configuration (valid, the two deprecation warnings) and on a broken one (every error, exit 1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = fileURLToPath(new URL('../xceadmin.js', import.meta.url));

function run(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('the shipped configs/ pass with exactly the two expected deprecation warnings', () => {
  const r = run('config', 'build', 'configs');
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines.length, 3, r.stdout);
  assert.match(
    lines[0] as string,
    /^queues\.yaml:\d+:\d+: warning: night: res_req: queue night sets res_req, which is deprecated/,
  );
  assert.match(
    lines[1] as string,
    /^queues\.yaml:\d+:\d+: warning: night: pre_exec: queue night sets pre_exec, which is deprecated/,
  );
  assert.match(
    lines[2] as string,
    /^config build: configs is valid \(0 errors, 2 warnings\); profiles: openfoam@[0-9a-f]{6} \(aliases: openfoam-old\), python@[0-9a-f]{6}, .*default_application: python; site presets: openfoam@[0-9a-f]{6}$/,
  );
});

test('--json gives the same verdict for scripts', () => {
  const r = run('config', 'build', 'configs', '--json');
  assert.equal(r.status, 0);
  const report = JSON.parse(r.stdout) as {
    ok: boolean;
    errors: unknown[];
    warnings: Array<{ file: string; entry: string; field: string; line: number }>;
    profiles: Array<{ name: string; label: string; hash: string }>;
  };
  assert.equal(report.ok, true);
  assert.deepEqual(report.errors, []);
  assert.deepEqual(
    report.warnings.map((w) => [w.file, w.entry, w.field]),
    [
      ['queues.yaml', 'night', 'res_req'],
      ['queues.yaml', 'night', 'pre_exec'],
    ],
  );
  const foam = report.profiles.find((p) => p.name === 'openfoam');
  assert.ok(foam && /^[0-9a-f]{64}$/.test(foam.hash) && foam.label === `openfoam@${foam.hash.slice(0, 6)}`);
});

test('a broken configuration prints every error with file, entry, field and line:column, and exits 1', () => {
  const r = run('config', 'build', 'cli/fixtures/config-bad');
  assert.equal(r.status, 1);
  const expected = [
    /^xce\.yaml:13:22: error: default_application: default_application names foam, which is an alias of profile openfoam; name the profile itself \(openfoam\)$/m,
    /^applications\.yaml:5:11: error: openfoam: mode: "sandbox": only `direct` is supported in this version$/m,
    /^applications\.yaml:7:46: error: openfoam: resreq: resource requirement "select\[ib\] rusage\[license_foam=1", column 33: expected "\]" to close rusage\[ but found the end$/m,
    /^applications\.yaml:8:24: error: openfoam: limits\.runtime: "24x": expected a duration such as 24h/m,
    /^applications\.yaml:9:12: error: openfoam: env\.XCE_JOBID: environment variable XCE_JOBID: the XCE_ prefix is reserved/m,
    /^applications\.yaml:12:15: error: python: aliases\[0\]: alias "foam" of profile python clashes with alias foam of profile openfoam/m,
    /^applications\.yaml:13:5: error: python: limts: unknown key "limts"; did you mean "limits"\?$/m,
    /^config build: cli\/fixtures\/config-bad is refused \(7 errors, 2 warnings\)$/m,
  ];
  for (const re of expected) assert.match(r.stderr, re);
  const json = run('config', 'build', 'cli/fixtures/config-bad', '--json');
  assert.equal(json.status, 1);
  const report = JSON.parse(json.stdout) as {
    ok: boolean;
    errors: Array<{ file: string; entry?: string; field?: string; line?: number; column?: number }>;
  };
  assert.equal(report.ok, false);
  assert.equal(report.errors.length, 7);
  assert.ok(
    report.errors.every(
      (e) => e.file !== undefined && e.line !== undefined && e.column !== undefined && e.field !== undefined,
    ),
  );
});

test('a missing directory and an unknown subcommand are usage errors (exit 2)', () => {
  const r = run('config', 'build', 'no/such/dir');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /cannot read configuration directory no\/such\/dir: ENOENT/);
  assert.equal(run('config', 'bild', 'configs').status, 2);
});
