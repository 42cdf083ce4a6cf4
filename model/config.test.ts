// loadConfig: the shipped configuration, then one broken file per kind of error, each asserting
// the diagnostic names the file, the entry and the field (and the line where the YAML gives it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { loadConfig } from './config.js';
import type { ClusterConfig, Diagnostic } from './config-types.js';
import { profileNameForSubmit, resolveProfile, describeResolution } from './profiles.js';

const CONFIGS = new URL('../../configs/', import.meta.url);
const shipped: Record<string, string> = Object.fromEntries(
  readdirSync(CONFIGS)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => [f, readFileSync(new URL(f, CONFIGS), 'utf8')]),
);

function load(files: Record<string, string | null>) {
  const merged = { ...shipped, ...files };
  return loadConfig(
    Object.entries(merged)
      .filter((e): e is [string, string] => e[1] !== null)
      .map(([path, text]) => ({ path: `cfg/${path}`, text })),
  );
}

function ok(files: Record<string, string | null> = {}): { config: ClusterConfig; warnings: readonly Diagnostic[] } {
  const r = load(files);
  assert.ok(r.ok, r.ok ? '' : JSON.stringify(r.errors, null, 1));
  return r;
}

function errors(files: Record<string, string | null>): readonly Diagnostic[] {
  const r = load(files);
  assert.equal(r.ok, false, 'the configuration should be refused');
  return r.ok ? [] : r.errors;
}

/** Replaces `from` (which must occur) in a shipped file. */
function edit(file: string, from: string, to: string): Record<string, string> {
  const text = shipped[file] as string;
  assert.ok(text.includes(from), `${file} contains ${from}`);
  return { [file]: text.replace(from, to) };
}

function expectOne(ds: readonly Diagnostic[], want: Partial<Diagnostic> & { match: RegExp }): Diagnostic {
  const { match, ...fields } = want;
  const found = ds.find(
    (d) =>
      match.test(d.message) &&
      Object.entries(fields).every(([k, v]) => (d as unknown as Record<string, unknown>)[k] === v),
  );
  assert.ok(
    found,
    `no diagnostic ${JSON.stringify({ ...fields, match: String(match) })} among ${JSON.stringify(ds, null, 1)}`,
  );
  return found;
}

function lineOf(text: string, needle: string): number {
  const i = text.indexOf(needle);
  assert.ok(i >= 0);
  return text.slice(0, i).split('\n').length;
}

/** Edits `from` into `to` in `file`: the one error `want` names stands in `file`, on the line that holds `at`. */
function errorAt(file: string, from: string, to: string, at: string, want: Partial<Diagnostic> & { match: RegExp }) {
  const files = edit(file, from, to);
  const d = expectOne(errors(files), { file, ...want });
  assert.equal(d.line, lineOf(files[file] as string, at));
  return d;
}

test('the shipped configuration loads with exactly the two queue deprecation warnings', () => {
  const { config, warnings } = ok();
  assert.deepEqual(
    warnings.map((w) => [w.file, w.entry, w.field]),
    [
      ['queues.yaml', 'night', 'res_req'],
      ['queues.yaml', 'night', 'pre_exec'],
    ],
  );
  assert.match(warnings[0]?.message ?? '', /deprecated.*application profile/);
  assert.equal(config.cluster.defaultApplication, 'python');
  assert.equal(config.cluster.controllers.length, 3);
  assert.deepEqual([...config.aliases], [['openfoam-old', 'openfoam']]);
  const foam = config.profiles.get('openfoam');
  assert.ok(foam);
  assert.deepEqual(foam.limits, { runtime_s: 86_400, memory_bytes: 128 * 1024 ** 3 });
  assert.deepEqual(foam.tasks, { min: 32, max: 512 });
  assert.equal(foam.launchType, 'openmpi');
  assert.equal(config.resources.get('license_foam')?.total, 20);
  assert.equal(config.queues.get('night')?.deprecatedResReq, 'select[x86_64] rusage[mem=2000]');
  assert.ok(config.profiles.get('jupyter')?.service !== null);
});

test('aliases resolve to their target everywhere; submits record the target; no --app means the default', () => {
  const { config } = ok();
  const r = resolveProfile(config, 'openfoam-old');
  assert.equal(r?.profile.name, 'openfoam');
  assert.equal(r?.recordedAs, 'openfoam-old');
  assert.equal(describeResolution('openfoam-old', r!.profile), 'openfoam (recorded as openfoam-old)');
  assert.equal(resolveProfile(config, 'nope'), null);
  assert.equal(profileNameForSubmit(config, 'openfoam-old'), 'openfoam');
  assert.equal(profileNameForSubmit(config, null), 'python');
  assert.equal(profileNameForSubmit(config, 'mpich'), 'mpich');
});

test('no applications.yaml means one built-in profile `default` (mode direct, no attributes)', () => {
  const { config } = ok({
    'applications.yaml': null,
    'xce.yaml': (shipped['xce.yaml'] as string).replace('default_application: python', ''),
    'rbac.yaml': null,
  });
  assert.deepEqual([...config.profiles.keys()], ['default']);
  const d = config.profiles.get('default');
  assert.equal(d?.mode, 'direct');
  assert.equal(d?.resreq, null);
  assert.equal(config.cluster.defaultApplication, 'default');
  assert.equal(profileNameForSubmit(config, null), 'default');
});

test('a YAML syntax error names the file, line and column', () => {
  const ds = errors({ 'queues.yaml': 'queues:\n  - name: normal\n    priority: [30\n' });
  const d = expectOne(ds, { file: 'queues.yaml', match: /^YAML: / });
  assert.ok(d.line !== undefined && d.column !== undefined);
});

test('a YAML alias bomb is refused, not expanded', () => {
  const bomb = [
    'a: &a [x, x, x, x, x, x, x, x, x, x]',
    ...Array.from(
      { length: 6 },
      (_, i) =>
        `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10)
          .fill(`*${String.fromCharCode(97 + i)}`)
          .join(', ')}]`,
    ),
    'queues: []',
  ].join('\n');
  expectOne(errors({ 'queues.yaml': bomb }), { file: 'queues.yaml', match: /YAML: .*alias/i });
});

test('an unknown key is an error at the key, with a suggestion', () => {
  const d = errorAt(
    'applications.yaml',
    'limits: { runtime: 24h, memory: 128G }',
    'limts: { runtime: 24h, memory: 128G }',
    'limts',
    { entry: 'openfoam', field: 'limts', match: /unknown key "limts"; did you mean "limits"\?/ },
  );
  assert.equal(d.column, 5);
});

test('token lifetimes: 1h and 7d by default; zero, garbled, over 30d or a refresh shorter than the access token refused at the field', () => {
  const { config } = ok();
  assert.equal(config.cluster.tokenLifetimeMs, 3_600_000);
  assert.equal(config.cluster.refreshTokenLifetimeMs, 7 * 86_400_000);
  errorAt('xce.yaml', 'token_lifetime: 1h', 'token_lifetime: 0s', 'token_lifetime: 0s', {
    field: 'token_lifetime',
    match: /^token_lifetime: "0s" would issue tokens already expired; give a duration longer than 0/,
  });
  errorAt('xce.yaml', 'token_lifetime: 1h', 'token_lifetime: soon', 'token_lifetime: soon', {
    field: 'token_lifetime',
    match: /soon/,
  });
  errorAt('xce.yaml', 'refresh_token_lifetime: 7d', 'refresh_token_lifetime: 31d', 'refresh_token_lifetime: 31d', {
    field: 'refresh_token_lifetime',
    match: /^refresh_token_lifetime: "31d" is longer than the longest token lifetime, 30d/,
  });
  errorAt('xce.yaml', 'token_lifetime: 1h', 'token_lifetime: 8d', 'refresh_token_lifetime: 7d', {
    field: 'refresh_token_lifetime',
    match: /shorter than token_lifetime \(8d\): a refresh token must outlive the tokens it renews/,
  });
});

test('a mode other than direct is refused: only direct exists in this version', () => {
  errorAt(
    'applications.yaml',
    'mode: direct\n    launch_type: openmpi',
    'mode: sandbox\n    launch_type: openmpi',
    'mode: sandbox',
    { entry: 'openfoam', field: 'mode', match: /^"sandbox": only `direct` is supported in this version/ },
  );
});

test('a missing required key is named', () => {
  expectOne(errors(edit('queues.yaml', '    priority: 60\n', '')), {
    file: 'queues.yaml',
    entry: 'priority',
    field: 'priority',
    match: /missing required key "priority"/,
  });
});

test('bad units name the field and what was expected', () => {
  expectOne(errors(edit('applications.yaml', 'runtime: 24h, memory: 128G', 'runtime: 24x, memory: 128G')), {
    file: 'applications.yaml',
    entry: 'openfoam',
    field: 'limits.runtime',
    match: /expected a duration such as 24h/,
  });
  expectOne(errors(edit('applications.yaml', 'runtime: 24h, memory: 128G', 'runtime: 24h, memory: 128Q')), {
    entry: 'openfoam',
    field: 'limits.memory',
    match: /expected a size such as 128G/,
  });
});

test('a resreq syntax error points at the column inside the string', () => {
  const files = edit(
    'applications.yaml',
    'resreq: "select[ib] rusage[license_foam=1]"',
    'resreq: "select[ib] rusage[license_foam=]"',
  );
  const d = expectOne(errors(files), {
    file: 'applications.yaml',
    entry: 'openfoam',
    field: 'resreq',
    match: /column 32: expected a number for license_foam/,
  });
  const text = files['applications.yaml'] as string;
  const line = lineOf(text, 'rusage[license_foam=]');
  assert.equal(d.line, line);
  const lineText = text.split('\n')[line - 1] as string;
  assert.equal(lineText[(d.column as number) - 1], ']', 'the column is that of the problem in the file');
});

test('resreq resource names are checked against resources.yaml', () => {
  expectOne(
    errors(
      edit(
        'applications.yaml',
        'resreq: "select[ib] rusage[license_foam=1]"',
        'resreq: "select[infiniband] rusage[license_foam=1]"',
      ),
    ),
    {
      file: 'applications.yaml',
      entry: 'openfoam',
      field: 'resreq',
      match: /select\[\.\.\.\] names resource "infiniband", which is not defined in resources\.yaml/,
    },
  );
});

test('a compound resreq in a profile is refused', () => {
  expectOne(
    errors(
      edit(
        'applications.yaml',
        'resreq: "select[ib] rusage[license_foam=1]"',
        'resreq: "{select[ib]} + {select[x86_64]}"',
      ),
    ),
    {
      entry: 'openfoam',
      field: 'resreq',
      match: /compound or alternative requirements \("\+"\) are not supported in a profile/,
    },
  );
});

test('XCE_ variables are reserved in a profile env', () => {
  errorAt(
    'applications.yaml',
    'env: { FOAM_INST_DIR: /opt/openfoam }',
    'env: { FOAM_INST_DIR: /opt/openfoam, XCE_JOBID: "1" }',
    'XCE_JOBID',
    { entry: 'openfoam', field: 'env.XCE_JOBID', match: /XCE_JOBID: the XCE_ prefix is reserved/ },
  );
});

test("a task range, limit or service count that does not fit its Cap'n Proto field is refused, naming the field and its range", () => {
  // TaskRange.max is a UInt32: 99999999999 would be hashed as 1215752191 (the same label).
  for (const [from, to, field, match] of [
    [
      'tasks: { min: 32, max: 512 }',
      'tasks: { min: 1, max: 99999999999 }',
      'tasks.max',
      /^99999999999 does not fit: TaskRange\.max \(schema\/profile\.capnp\) is a UInt32, so it takes a whole number from 1 to 4294967295$/,
    ],
    [
      'tasks: { min: 32, max: 512 }',
      'tasks: { min: 4294967296, max: 4294967296 }',
      'tasks.min',
      /TaskRange\.min .* from 1 to 4294967295/,
    ],
    [
      'runtime: 24h, memory: 128G',
      'runtime: 24h, memory: 128G, tasks: 4294967296',
      'limits.tasks',
      /Limits\.tasks .* UInt32, so it takes a whole number from 1 to 4294967295/,
    ],
  ] as const) {
    expectOne(errors(edit('applications.yaml', from, to)), {
      file: 'applications.yaml',
      entry: 'openfoam',
      field,
      match,
    });
  }
  for (const [from, to, field, match] of [
    [
      'replicas: { min: 1, max: 1 }',
      'replicas: { min: 1, max: 4294967296 }',
      'service.replicas.max',
      /Range\.max .* UInt32/,
    ],
    ['max_skew: 1', 'max_skew: 4294967296', 'service.spread.max_skew', /Spread\.maxSkew .* UInt32/],
    ['max_surge: 1', 'max_surge: 4294967296', 'service.rollout.max_surge', /Rollout\.maxSurge .* UInt32/],
    ['attempts: 5', 'attempts: 4294967296', 'service.restart.give_up.attempts', /Restart\.giveUpAttempts .* UInt32/],
    [
      'failure_threshold: 3',
      'failure_threshold: 4294967296',
      'service.liveness.failure_threshold',
      /Probe\.failureThreshold .* UInt32/,
    ],
    [
      '{ name: http, protocol: tcp }',
      '{ name: http, port: 65536, protocol: tcp }',
      'service.ports[0].port',
      /Port\.port .* UInt16, so it takes a whole number from 0 to 65535/,
    ],
  ] as const) {
    expectOne(errors(edit('applications.yaml', from, to)), { entry: 'jupyter', field, match });
  }
  // span[ptile=4294967297] would be hashed like span[ptile=1].
  expectOne(errors(edit('applications.yaml', 'select[gpu>0] span[hosts=1]', 'select[gpu>0] span[ptile=4294967297]')), {
    entry: 'pytorch-gpu',
    field: 'resreq',
    match: /span ptile must be a whole number from 1 to 4294967295, not 4294967297/,
  });
});

test('a profile limit of zero, or one the worker would not honour as written, is refused naming the value', () => {
  for (const [to, field, match] of [
    ['runtime: 0, memory: 128G', 'limits.runtime', /a runtime limit of 0 would stop the job at once; give 1s or more/],
    ['runtime: 24h, memory: 0', 'limits.memory', /a memory limit of 0 would stop the job at once; give 1K or more/],
    ['runtime: 24h, memory: 1500', 'limits.memory', /a memory limit of 1500 bytes is not a whole number of KiB/],
    ['runtime: 24h, memory: 128G, cpu: 0s', 'limits.cpu', /a cpu limit of 0 would stop the job at once/],
  ] as const) {
    expectOne(errors(edit('applications.yaml', 'runtime: 24h, memory: 128G', to)), { entry: 'openfoam', field, match });
  }
});

test("schema errors name the bad value and what is allowed, never the validator's own words", () => {
  const ds = [
    ...errors(edit('applications.yaml', 'launch_type: openmpi', 'launch_type: openmp')),
    ...errors(edit('applications.yaml', 'tasks: { min: 32, max: 512 }', 'tasks: { min: 0, max: 512 }')),
    ...errors(edit('applications.yaml', 'tasks: { min: 32, max: 512 }', 'tasks: { min: "x", max: 512 }')),
    ...errors(edit('queues.yaml', 'priority: 60', 'priority: 6000')),
  ];
  expectOne(ds, {
    field: 'launch_type',
    match: /^"openmp" is not allowed: expected one of "serial", "openmpi", "mpich"$/,
  });
  expectOne(ds, { field: 'tasks.min', match: /^0 does not fit: TaskRange\.min .* from 1 to 4294967295$/ });
  expectOne(ds, { field: 'tasks.min', match: /^expected a number, not the text "x"$/ });
  expectOne(ds, { file: 'queues.yaml', field: 'priority', match: /^6000 is too large: at most 1000$/ });
  for (const d of ds)
    assert.doesNotMatch(d.message, /Too small|Too big|Invalid input|Invalid option|expected number to be/);
});

test('a task range with min above max is refused', () => {
  expectOne(errors(edit('applications.yaml', 'tasks: { min: 32, max: 512 }', 'tasks: { min: 64, max: 32 }')), {
    entry: 'openfoam',
    field: 'tasks',
    match: /tasks min \(64\) is larger than max \(32\)/,
  });
});

test('duplicate names are errors', () => {
  const dup = (shipped['applications.yaml'] as string).replace('  - name: mpich\n', '  - name: python\n');
  expectOne(errors({ 'applications.yaml': dup }), {
    file: 'applications.yaml',
    entry: 'python',
    field: 'name',
    match: /application profile "python" is defined twice/,
  });
  expectOne(errors(edit('queues.yaml', 'name: priority', 'name: normal')), {
    file: 'queues.yaml',
    entry: 'normal',
    field: 'name',
    match: /queue "normal" is defined twice/,
  });
});

test('an alias that clashes with a profile name is an error', () => {
  expectOne(errors(edit('applications.yaml', 'aliases: [openfoam-old]', 'aliases: [openfoam-old, mpich]')), {
    file: 'applications.yaml',
    entry: 'openfoam',
    field: 'aliases[1]',
    match: /alias "mpich" of profile openfoam clashes with profile mpich/,
  });
});

test('an alias that clashes with another alias is an error', () => {
  const text = (shipped['applications.yaml'] as string).replace(
    '  - name: mpich\n',
    '  - name: mpich\n    aliases: [openfoam-old]\n',
  );
  expectOne(errors({ 'applications.yaml': text }), {
    entry: 'mpich',
    field: 'aliases[0]',
    match: /alias "openfoam-old" of profile mpich clashes with alias openfoam-old of profile openfoam/,
  });
});

test('an alias chain is an error', () => {
  // python lists alias "old-py"; openfoam lists "python" as its alias: old-py → python → openfoam.
  let text = (shipped['applications.yaml'] as string).replace(
    'aliases: [openfoam-old]',
    'aliases: [openfoam-old, python]',
  );
  text = text.replace('  - name: python\n', '  - name: python\n    aliases: [old-py]\n');
  const ds = errors({ 'applications.yaml': text });
  expectOne(ds, { entry: 'python', field: 'aliases[0]', match: /alias chain: old-py → python → openfoam/ });
  expectOne(ds, { entry: 'openfoam', field: 'aliases[1]', match: /clashes with profile python.*alias chain/ });
});

test('default_application naming an alias is an error, never a fallback', () => {
  errorAt(
    'xce.yaml',
    'default_application: python',
    'default_application: openfoam-old',
    'default_application: openfoam-old',
    {
      field: 'default_application',
      match:
        /default_application names openfoam-old, which is an alias of profile openfoam; name the profile itself \(openfoam\)/,
    },
  );
});

test('default_application naming an undefined profile is an error, never a fallback', () => {
  expectOne(errors(edit('xce.yaml', 'default_application: python', 'default_application: pyhton')), {
    file: 'xce.yaml',
    field: 'default_application',
    match: /default_application names profile pyhton, which is not defined in applications\.yaml/,
  });
  expectOne(errors({ 'applications.yaml': null, 'rbac.yaml': null }), {
    file: 'xce.yaml',
    field: 'default_application',
    match: /there is no applications\.yaml/,
  });
});

test('queue res_req / pre_exec / post_exec are deprecation warnings suggesting a profile', () => {
  const { warnings } = ok(
    edit(
      'queues.yaml',
      '    pre_exec: /opt/xce/queue/night/pre.sh\n',
      '    pre_exec: /opt/xce/queue/night/pre.sh\n    post_exec: /opt/xce/queue/night/post.sh\n',
    ),
  );
  assert.deepEqual(
    warnings.map((w) => w.field),
    ['res_req', 'pre_exec', 'post_exec'],
  );
  for (const w of warnings) {
    assert.equal(w.severity, 'warning');
    assert.equal(w.entry, 'night');
    assert.match(w.message, /deprecated: .*application profile \(applications\.yaml\)/);
  }
  // A deprecated res_req is still checked: a typo in it is an error.
  expectOne(errors(edit('queues.yaml', 'rusage[mem=2000]', 'rusage[mem=]')), {
    file: 'queues.yaml',
    entry: 'night',
    field: 'res_req',
    match: /expected a number for mem/,
  });
});

test('the service section is validated', () => {
  expectOne(
    errors(
      edit(
        'applications.yaml',
        'readiness: { tcp: { port: http }, period: 5s }',
        'readiness: { tcp: { port: web }, period: 5s }',
      ),
    ),
    {
      entry: 'jupyter',
      field: 'service.readiness.tcp.port',
      match: /readiness probe names port "web", which is not among this service's ports \(http\)/,
    },
  );
  expectOne(
    errors(
      edit(
        'applications.yaml',
        'liveness: { http: { port: http, path: /api }, period: 15s',
        'liveness: { command: "true", http: { port: http, path: /api }, period: 15s',
      ),
    ),
    {
      entry: 'jupyter',
      field: 'service.liveness',
      match: /exactly one of command, tcp or http \(it has 2\)/,
    },
  );
  expectOne(errors(edit('applications.yaml', 'restart: { policy: on-failure', 'restart: { policy: sometimes')), {
    entry: 'jupyter',
    field: 'service.restart.policy',
    match: /expected one of "always", "on-failure", "never"/,
  });
  expectOne(errors(edit('applications.yaml', 'replicas: { min: 1, max: 1 }', 'replicas: { min: 3, max: 1 }')), {
    entry: 'jupyter',
    field: 'service.replicas',
    match: /replicas min \(3\) is larger than max \(1\)/,
  });
  expectOne(errors(edit('applications.yaml', '    kind: service\n', '')), {
    entry: 'jupyter',
    field: 'service',
    match: /a service: section needs kind: service/,
  });
});

test('RBAC values name real queues; a grant naming an alias grants on its profile (the rename workflow), a grant on a missing profile is only a warning', () => {
  const renamed = ok(edit('rbac.yaml', 'values: [openfoam, mpich]', 'values: [openfoam-old, mpich]'));
  expectOne(renamed.warnings, {
    file: 'rbac.yaml',
    entry: 'cfd_user',
    field: 'permissions[1].values[0]',
    match:
      /app:use names openfoam-old, an alias of profile openfoam: it grants app:use on openfoam; name openfoam here/,
  });
  const grant = renamed.config.rbac.roles.get('cfd_user')?.grants.find((g) => g.permission === 'app:use');
  assert.deepEqual(grant?.values, ['openfoam', 'mpich']);
  // Removing or renaming a profile must not need an rbac.yaml edit in the same upgrade.
  expectOne(ok(edit('rbac.yaml', 'values: [openfoam, mpich]', 'values: [openfoam, gromacs]')).warnings, {
    entry: 'cfd_user',
    match: /application profile gromacs, which is not defined.*no effect/,
  });
  expectOne(errors(edit('rbac.yaml', 'values: [night]', 'values: [nite]')), {
    entry: 'cfd_user',
    match: /queue:submit names queue nite, which is not defined in queues\.yaml/,
  });
  expectOne(errors(edit('rbac.yaml', '{ name: job:view }', '{ name: job:view, type: queue, values: [normal] }')), {
    entry: 'basic_user',
    field: 'permissions[3].type',
    match: /job:view is not scoped to a queue/,
  });
  const w = ok(edit('rbac.yaml', 'users: [bob]', 'users: [bob, carol]')).warnings;
  expectOne(w, { file: 'rbac.yaml', field: 'users[1]', match: /names user carol, who is not in users\.yaml/ });
});

test('hosts name defined resources of the right type', () => {
  expectOne(
    errors(
      edit(
        'hosts.yaml',
        'resources: [ib, x86_64], numeric: { mem: 262144, swp: 8192 }, strings: { rack: r1 } }\n  - { name: node02',
        'resources: [ib, x86_64, gpu], numeric: { mem: 262144, swp: 8192 }, strings: { rack: r1 } }\n  - { name: node02',
      ),
    ),
    {
      file: 'hosts.yaml',
      entry: 'node01',
      field: 'resources[2]',
      match: /resource "gpu" is numeric; list it under numeric/,
    },
  );
  expectOne(errors(edit('hosts.yaml', 'numeric: { mem: 524288, gpu: 4 }', 'numeric: { mem: 524288, gpus: 4 }')), {
    entry: 'gpu01',
    field: 'numeric.gpus',
    match: /lists resource "gpus", which is not defined/,
  });
});

test('resources, users and controllers are checked', () => {
  expectOne(errors(edit('resources.yaml', 'scope: cluster, total: 20,', 'scope: cluster,')), {
    file: 'resources.yaml',
    entry: 'license_foam',
    field: 'scope',
    match: /needs a total/,
  });
  expectOne(errors(edit('users.yaml', 'password: "scrypt$16384$OjJ', 'password: "md5$16384$OjJ')), {
    file: 'users.yaml',
    entry: 'bob',
    field: 'password',
    match: /expected a scrypt hash/,
  });
  expectOne(
    errors(edit('xce.yaml', '{ id: 2, host: 127.0.0.1, port: 7102 }', '{ id: 1, host: 127.0.0.1, port: 7102 }')),
    { file: 'xce.yaml', entry: 'controller 1', field: 'id', match: /controller id 1 is used twice/ },
  );
  const w = ok(edit('xce.yaml', '  - { id: 3, host: 127.0.0.1, port: 7103 }\n', '')).warnings;
  expectOne(w, { file: 'xce.yaml', field: 'controllers', match: /2 controllers tolerate no more failures than 1/ });
});

test('a missing required file is an error; an unknown file is a warning', () => {
  expectOne(errors({ 'xce.yaml': null }), { file: 'xce.yaml', match: /xce\.yaml is missing; it is required/ });
  expectOne(ok({ 'presets.yaml': 'a: 1\n' }).warnings, { file: 'presets.yaml', match: /not a file XCE reads/ });
});

test('every error is reported, not only the first', () => {
  let text = (shipped['applications.yaml'] as string).replace(
    'runtime: 24h, memory: 128G',
    'runtime: 24x, memory: 128G',
  );
  text = text.replace('mode: direct\n    launch_type: mpich', 'mode: vm\n    launch_type: mpich');
  const ds = errors({
    'applications.yaml': text,
    'xce.yaml': (shipped['xce.yaml'] as string).replace('default_application: python', 'default_application: gone'),
  });
  expectOne(ds, { entry: 'openfoam', field: 'limits.runtime', match: /duration/ });
  expectOne(ds, { entry: 'mpich', field: 'mode', match: /only `direct`/ });
});

test('property: any edit of the shipped files gives a verdict, never an exception', () => {
  const names = Object.keys(shipped);
  const arbEdit = fc.record({
    file: fc.constantFrom(...names),
    at: fc.nat(),
    kind: fc.constantFrom('delete-line', 'duplicate-line', 'replace-char', 'insert-text'),
    text: fc.oneof(
      fc.constantFrom(
        ':',
        '-',
        '[',
        ']',
        '{',
        '}',
        '"',
        ' ',
        '\n',
        '  ',
        'x',
        '0',
        '*a',
        '&a',
        'null',
        '~',
        '- name: x',
      ),
      fc.string({ maxLength: 6 }),
    ),
  });
  fc.assert(
    fc.property(fc.array(arbEdit, { minLength: 1, maxLength: 3 }), (edits) => {
      const files: Record<string, string> = { ...shipped };
      for (const e of edits) {
        const text = files[e.file] as string;
        const lines = text.split('\n');
        const i = e.at % lines.length;
        if (e.kind === 'delete-line') lines.splice(i, 1);
        else if (e.kind === 'duplicate-line') lines.splice(i, 0, lines[i] as string);
        const joined = lines.join('\n');
        const c = e.at % Math.max(1, joined.length);
        files[e.file] =
          e.kind === 'replace-char'
            ? joined.slice(0, c) + e.text + joined.slice(c + 1)
            : e.kind === 'insert-text'
              ? joined.slice(0, c) + e.text + joined.slice(c)
              : joined;
      }
      const r = load(files);
      if (!r.ok) {
        assert.ok(r.errors.length > 0);
        for (const d of r.errors) assert.ok(names.includes(d.file) && d.message.length > 0, JSON.stringify(d));
      }
    }),
    { numRuns: 300 },
  );
});

test('the same files load once: a second load of equal files (new objects) is the first result; other files load anew', () => {
  const files = () => Object.entries(shipped).map(([path, text]) => ({ path: `cfg/${path}`, text: text as string }));
  const a = loadConfig(files());
  assert.ok(a.ok);
  assert.equal(loadConfig(files()), a, 'equal files: the same result');
  const changed = files().map((f) =>
    f.path.endsWith('queues.yaml') ? { ...f, text: `${f.text}\n# a comment changes the text\n` } : f,
  );
  const b = loadConfig(changed);
  assert.notEqual(b, a);
  assert.deepEqual(b, a, 'a comment changes nothing loaded');
  assert.notEqual(loadConfig(files()), b, 'back to the first files: loaded again');
});
