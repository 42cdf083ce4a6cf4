import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePresetFile, presetHash, presetLabel } from './presets.js';
import { configFileKey, loadConfig } from './config.js';
import { formatDiagnostic } from './diagnostics.js';
import { testClusterFiles } from '../testing/test-cluster.js';

const GOOD = `# tuning for OpenFOAM
name: cfd-big
description: "128 tasks"
app: openfoam
queue: night
tasks: 128
resreq: "span[ptile=32] rusage[mem=4000]"
env: { FOAM_RUN: big, DEPTH: 3 }
limits: { runtime: 12h, memory: 64G, cpu: 3600, tasks: 128 }
output: "cfd-%J.out"
error: "cfd-%J.err"
job_name: cfd
pre_exec: ./prepare.sh
post_exec: ./collect.sh
`;

function errors(file: string, text: string): string[] {
  const r = parsePresetFile(file, text);
  assert.equal(r.preset, null, 'a bad file gives no preset');
  return r.diagnostics.filter((d) => d.severity === 'error').map(formatDiagnostic);
}

test('a preset file becomes the job values a user would type', () => {
  const r = parsePresetFile('/home/u/.config/xce/presets/cfd-big.yaml', GOOD);
  assert.deepEqual(r.diagnostics, []);
  assert.deepEqual(r.preset, {
    name: 'cfd-big',
    description: '128 tasks',
    values: {
      app: 'openfoam',
      queue: 'night',
      name: 'cfd',
      tasks: 128,
      resreq: 'span[ptile=32] rusage[mem=4000]',
      env: { FOAM_RUN: 'big', DEPTH: '3' },
      limits: { runtime: '12h', memory: '64G', cpu: '3600', tasks: 128 },
      preExec: './prepare.sh',
      postExec: './collect.sh',
      stdout: 'cfd-%J.out',
      stderr: 'cfd-%J.err',
    },
  });
});

test('the content hash ignores comments, key order and the description, and follows every value', () => {
  const a = parsePresetFile('cfd-big.yaml', GOOD).preset!;
  const reordered = GOOD.split('\n')
    .filter((l) => !l.startsWith('#') && !l.startsWith('description'))
    .reverse()
    .join('\n');
  const b = parsePresetFile('cfd-big.yaml', `${reordered}\ndescription: other words\n`).preset!;
  assert.equal(presetHash(a), presetHash(b));
  const c = parsePresetFile('cfd-big.yaml', GOOD.replace('tasks: 128\n', 'tasks: 96\n')).preset!;
  assert.notEqual(presetHash(a), presetHash(c));
  assert.match(presetLabel('cfd-big', presetHash(a)), /^cfd-big@[0-9a-f]{6}$/);
});

test('an unknown field is refused naming file, entry, field and position, with the likely key', () => {
  assert.deepEqual(errors('p/cfd.yaml', 'name: cfd\ntaskz: 4\n'), [
    'p/cfd.yaml:2:1: error: cfd: taskz: unknown key "taskz"; did you mean "tasks"?',
  ]);
  assert.deepEqual(errors('p/cfd.yaml', 'name: cfd\nlimits: { runtme: 1h }\n'), [
    'p/cfd.yaml:2:11: error: cfd: limits.runtme: unknown key "runtme"; did you mean "runtime"?',
  ]);
});

test('a bad resreq is refused at its column', () => {
  assert.deepEqual(errors('cfd.yaml', 'name: cfd\nresreq: "span[ptile=]"\n'), [
    'cfd.yaml:2:21: error: cfd: resreq: resource requirement "span[ptile=]", column 12: span ptile must be a whole number from 1 to 4294967295',
  ]);
  assert.match(errors('cfd.yaml', 'name: cfd\nresreq: "select[ib"\n')[0]!, /^cfd\.yaml:2:\d+: error: cfd: resreq: /);
});

test('a reserved XCE_ variable and a bad variable name are refused naming the variable', () => {
  assert.deepEqual(errors('cfd.yaml', 'name: cfd\nenv:\n  XCE_JOBID: "1"\n  1BAD: x\n'), [
    'cfd.yaml:3:3: error: cfd: env.XCE_JOBID: environment variable XCE_JOBID: the XCE_ prefix is reserved for variables XCE sets itself; rename it',
    'cfd.yaml:4:3: error: cfd: env.1BAD: environment variable name "1BAD" is not valid: use letters, digits and "_", not starting with a digit',
  ]);
});

test('a missing name, or a name that is not the file name, is refused', () => {
  assert.deepEqual(errors('/x/presets/cfd.yaml', 'tasks: 4\n'), [
    '/x/presets/cfd.yaml:1:1: error: cfd: name: missing required key "name" (string)',
  ]);
  assert.deepEqual(errors('cfd.yaml', 'name: other\n'), [
    'cfd.yaml:1:7: error: other: name: the preset is named "other" but its file is cfd.yaml; a preset lives in a file of its own name',
  ]);
});

test('bad units, task counts and YAML are refused at the field', () => {
  assert.deepEqual(errors('cfd.yaml', 'name: cfd\nlimits: { runtime: 12x }\n'), [
    'cfd.yaml:2:20: error: cfd: limits.runtime: "12x": expected a duration such as 24h, 90m, 30s or 1h30m (a bare number is seconds)',
  ]);
  assert.match(errors('cfd.yaml', 'name: cfd\ntasks: 0\n')[0]!, /^cfd\.yaml:2:8: error: cfd: tasks: /);
  assert.match(errors('cfd.yaml', 'name: cfd\ntasks: [\n')[0]!, /^cfd\.yaml:\d+:\d+: error: cfd: YAML: /);
  assert.deepEqual(errors('cfd.yaml', ''), ['cfd.yaml:1:1: error: cfd: cfd.yaml is empty']);
});

test('site presets load with the configuration: keyed presets/NAME.yaml, checked against resources and profiles', () => {
  assert.equal(configFileKey('/etc/xce/presets/cfd.yaml'), 'presets/cfd.yaml');
  assert.equal(configFileKey('/etc/xce/queues.yaml'), 'queues.yaml');
  const base = testClusterFiles();
  const ok = loadConfig([
    ...base,
    { path: '/etc/xce/presets/foam.yaml', text: 'name: foam\napp: openfoam\ntasks: 64\n' },
  ]);
  assert.ok(ok.ok);
  assert.deepEqual([...ok.config.presets.keys()], ['foam']);
  assert.equal(ok.config.presets.get('foam')?.file, 'presets/foam.yaml');

  const conflict = loadConfig([
    ...base,
    { path: 'presets/big.yaml', text: 'name: big\napp: openfoam\nresreq: "rusage[license_foam=2]"\n' },
    { path: 'presets/gone.yaml', text: 'name: gone\napp: nothing\n' },
  ]);
  assert.ok(conflict.ok, 'conflicts are warnings: a preset carries no privilege');
  const warned = conflict.warnings.map(formatDiagnostic).filter((w) => w.startsWith('presets/'));
  assert.deepEqual(warned, [
    'presets/big.yaml:3:9: warning: big: resreq: conflicts with application profile openfoam: job sets rusage[license_foam=2] but application profile openfoam requires rusage[license_foam=1]; a job using this preset would be refused (change the preset or the profile)',
    'presets/gone.yaml:2:6: warning: gone: app: application profile nothing is not defined; a job using this preset would be refused',
  ]);

  const bad = loadConfig([...base, { path: 'presets/bad.yaml', text: 'name: bad\nresreq: "rusage[nosuch=1]"\n' }]);
  assert.equal(bad.ok, false);
  assert.match(bad.ok ? '' : formatDiagnostic(bad.errors[0]!), /^presets\/bad\.yaml:2:9: error: bad: resreq: .*nosuch/);
});
