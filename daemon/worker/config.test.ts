import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfigFile, resolveWorkerConfig, WorkerConfigError } from './config.js';

const YAML = `
host: node01
controllers: [ctl1:7400, ctl2:7400]
slots: 64
mem: 256G
booleans: [ib, x86_64]
numerics: { gpu: 4 }
strings: { rack: r1 }
launcher: { openmpi: /opt/ompi/bin/mpirun }
state_dir: /var/lib/xce/xcecd
kill_grace: 30s
jobs_max: 128
insecure_dev: true
`;

test('the YAML file configures the worker; flags override it', () => {
  const file = parseConfigFile(YAML, 'xcecd.yaml');
  const c = resolveWorkerConfig({}, file, {});
  assert.equal(c.host, 'node01');
  assert.deepEqual(c.controllers, ['ctl1:7400', 'ctl2:7400']);
  assert.deepEqual(c.resources, {
    slots: 64,
    mem_bytes: 256 * 1024 ** 3,
    booleans: ['ib', 'x86_64'],
    numerics: { gpu: 4 },
    strings: { rack: 'r1' },
  });
  assert.deepEqual(c.launchers, { openmpi: '/opt/ompi/bin/mpirun', mpich: 'mpirun' });
  assert.equal(c.killGrace_ms, 30_000);
  assert.equal(c.jobsMax, 128);
  const o = resolveWorkerConfig(
    {
      host: 'node09',
      slots: '8',
      bool: 'ib',
      num: ['gpu=2', 'ssd=1'],
      launcher: 'mpiexec',
      controllers: 'a:1,b:2,c:3',
    },
    file,
    {},
  );
  assert.equal(o.host, 'node09');
  assert.equal(o.resources.slots, 8);
  assert.deepEqual(o.resources.booleans, ['ib']);
  assert.deepEqual(o.resources.numerics, { gpu: 2, ssd: 1 });
  assert.deepEqual(o.launchers, { openmpi: 'mpiexec', mpich: 'mpiexec' });
  assert.deepEqual(o.controllers, ['a:1', 'b:2', 'c:3']);
});

test('XCE_CONTROLLERS gives the controllers when neither flag nor file does', () => {
  assert.deepEqual(
    resolveWorkerConfig({ host: 'h1', insecureDev: true }, {}, { XCE_CONTROLLERS: 'x:1, y:2' }).controllers,
    ['x:1', 'y:2'],
  );
  assert.throws(() => resolveWorkerConfig({ host: 'h1' }, {}, {}), /no controller address/);
});

test('configuration errors name the flag or the field', () => {
  assert.throws(() => resolveWorkerConfig({ host: 'h1', controllers: 'a:1', slots: 'many' }, {}, {}), /--slots "many"/);
  assert.throws(
    () => resolveWorkerConfig({ host: 'h1', controllers: 'a:1', mem: '12Q' }, {}, {}),
    /--mem: bad size "12Q"/,
  );
  assert.throws(
    () => resolveWorkerConfig({ host: 'h1', controllers: 'a:1', num: ['gpu'] }, {}, {}),
    /--num "gpu": expected name=value/,
  );
  assert.throws(
    () => resolveWorkerConfig({ host: 'h1', controllers: 'a:1', launcher: 'pvm=x' }, {}, {}),
    /bad --launcher part "pvm=x"/,
  );
  assert.throws(() => resolveWorkerConfig({ host: 'bad host', controllers: 'a:1' }, {}, {}), WorkerConfigError);
  assert.throws(
    () => resolveWorkerConfig({ host: 'h1', controllers: 'a:1', jobsMax: '100000' }, {}, {}),
    /at most 8192 jobs/,
  );
  assert.throws(() => parseConfigFile('slots: -1', 'w.yaml'), /w\.yaml: slots:/);
  assert.throws(() => parseConfigFile('colour: blue', 'w.yaml'), /Unrecognized key/);
});

test('a worker dials over TLS with a CA file, or over plain ws only when told insecure_dev', () => {
  const base = { host: 'h1', controllers: 'a:1' };
  assert.deepEqual(
    [resolveWorkerConfig({ ...base, caFile: '/etc/xce/ca.pem' }, {}, {})].map((c) => [c.caFile, c.insecureDev]),
    [['/etc/xce/ca.pem', false]],
  );
  assert.equal(resolveWorkerConfig(base, { insecure_dev: true }, {}).insecureDev, true);
  assert.throws(() => resolveWorkerConfig(base, {}, {}), /no --ca-file: the controllers' CA is needed/);
  assert.throws(() => resolveWorkerConfig({ ...base, caFile: 'ca.pem', insecureDev: true }, {}, {}), /not both/);
  assert.equal(
    resolveWorkerConfig({ ...base, insecureDev: true, credentialFile: '/etc/xce/h1.credential' }, {}, {})
      .credentialFile,
    '/etc/xce/h1.credential',
  );
});
