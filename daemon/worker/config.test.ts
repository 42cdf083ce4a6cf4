import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfigFile, resolveWorkerConfig, secretFromFileText, WorkerConfigError } from './config.js';

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
  assert.deepEqual(resolveWorkerConfig({ host: 'h1' }, {}, { XCE_CONTROLLERS: 'x:1, y:2' }).controllers, [
    'x:1',
    'y:2',
  ]);
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

test('the secret file is used without its final newline and must be long enough', () => {
  assert.equal(Buffer.from(secretFromFileText(Buffer.from(`${'k'.repeat(32)}\n`), 's', 32)).toString(), 'k'.repeat(32));
  assert.throws(
    () => secretFromFileText(Buffer.from('short\n'), '/etc/xce/cluster.secret', 32),
    /cluster\.secret: the cluster secret is 5 bytes; at least 32/,
  );
});
