import { test } from 'node:test';
import { elementId } from '../../model/job-id.js';
import { outputPath } from './job-run.js';
import assert from 'node:assert/strict';
import type { StartInfo } from '../worker-protocol.js';
import { FIXED_PATH, hostList, innerEnv, outerEnv, systemValues } from './env.js';

const INFO: StartInfo = {
  jobId: 5,
  run: 2,
  user: 'alice',
  queue: 'short',
  profile: 'openfoam',
  profileLabel: 'openfoam@3f2a9c',
  mode: 'direct',
  launchType: 'openmpi',
  command: ['x'],
  cwd: '/w',
  stdout: null,
  stderr: null,
  tasks: 8,
  hosts: [
    { host: 'n1', tasks: 4 },
    { host: 'n2', tasks: 4 },
  ],
  profileEnv: [
    { name: 'FOAM', value: '1' },
    { name: 'XCE_APP', value: 'spoof' },
  ],
  jobEnv: [
    { name: 'LD_PRELOAD', value: '/tmp/x.so' },
    { name: 'FOAM', value: 'job' },
  ],
  profilePreExec: null,
  profilePostExec: null,
  jobPreExec: null,
  jobPostExec: null,
  limits: {},
};
const ID = { name: 'alice', uid: 1000, gid: 1000, home: '/home/alice', switchUser: true };

test('the outer environment is exactly the system values and the profile env', () => {
  const { env, dropped } = outerEnv(INFO, ID, 'n1', '/w', null);
  assert.deepEqual(env, {
    PATH: FIXED_PATH,
    HOME: '/home/alice',
    USER: 'alice',
    LOGNAME: 'alice',
    FOAM: '1',
    XCE_JOBID: '5',
    XCE_ARRAY_INDEX: '0',
    XCE_RUN: '2',
    XCE_USER: 'alice',
    XCE_QUEUE: 'short',
    XCE_APP: 'openfoam',
    XCE_APP_LABEL: 'openfoam@3f2a9c',
    XCE_HOST: 'n1',
    XCE_HOSTS: 'n1:4,n2:4',
    XCE_TASKS: '8',
    XCE_LAUNCH_TYPE: 'openmpi',
    XCE_CWD: '/w',
  });
  assert.deepEqual(dropped, ['XCE_APP']);
});

test('an array element runs with its array id as XCE_JOBID and its index as XCE_ARRAY_INDEX', () => {
  const { env } = outerEnv({ ...INFO, jobId: elementId(5, 17) }, ID, 'n1', '/w', null);
  assert.equal(env['XCE_JOBID'], '5');
  assert.equal(env['XCE_ARRAY_INDEX'], '17');
});

test('the inner environment adds the job env after the profile env; XCE_ values cannot be replaced', () => {
  const { env, dropped } = innerEnv(INFO, ID, 'n1', '/w', null);
  assert.equal(env['LD_PRELOAD'], '/tmp/x.so');
  assert.equal(env['FOAM'], 'job');
  assert.equal(env['XCE_APP'], 'openfoam');
  assert.deepEqual(dropped, ['XCE_APP']);
});

test('post-execs learn how the job ended', () => {
  assert.deepEqual(
    [
      systemValues(INFO, 'n1', '/w', { exitCode: 3, signal: null })['XCE_JOB_EXIT_CODE'],
      systemValues(INFO, 'n1', '/w', { exitCode: 3, signal: null })['XCE_JOB_SIGNAL'],
    ],
    ['3', ''],
  );
  assert.equal(systemValues(INFO, 'n1', '/w', { exitCode: null, signal: 'SIGKILL' })['XCE_JOB_EXIT_CODE'], '137');
  assert.equal(systemValues(INFO, 'n1', '/w', 'not-run')['XCE_JOB_EXIT_CODE'], '');
  assert.equal(hostList(INFO), 'n1:4,n2:4');
});

test('output paths: %J is the job id (an element: its array id), %I the array index; an element defaults to xce-ID_INDEX', () => {
  assert.equal(outputPath(null, 7, 'out'), 'xce-7.out');
  assert.equal(outputPath(null, elementId(7, 3), 'err'), 'xce-7_3.err');
  assert.equal(outputPath('run-%J-%I.log', elementId(7, 3), 'out'), 'run-7-3.log');
  assert.equal(outputPath('run-%J-%I.log', 7, 'out'), 'run-7-0.log');
});
