// The rest of xcecli's human output escapes control characters too (render.test.ts has jobs list /
// show): apps show, the dry run, the submit and watch lines, and error messages, which may quote a
// job's values or output. And a hidden profile is said to be hidden in human output as in --json.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRequest, requestIdOf, RequestError } from '../api/protocol.js';
import { printableMessage } from './output.js';
import { renderApp, renderDryRun, renderJobDetails, renderSubmitted, renderWatchLine } from './render.js';
import { jobDetailsFixture } from '../testing/job-details.js';

const CONTROLS = /[\u0000-\u001f\u007f\u0080-\u009f]/;
const EVIL = 'ok\x1b]0;pwned\x07\x1b[2J\x1b[1A\rroot# \x00\x7f\u009b31m\ttab\nline2';
const lines = (text: string): string => text.replaceAll('\n', '');

test('apps show escapes every value it prints (name, label, alias, description, resreq, limits, env, pre/post-exec)', () => {
  const out = renderApp(
    {
      name: EVIL,
      label: EVIL,
      recordedAs: EVIL,
      description: EVIL,
      mode: EVIL,
      launchType: EVIL,
      isDefault: true,
      aliases: [EVIL],
      resreq: [`select[${EVIL}]`],
      tasks: { min: EVIL, max: EVIL },
      limits: [{ name: EVIL, max: EVIL }],
      env: [{ name: EVIL, value: EVIL }],
      preExec: EVIL,
      postExec: EVIL,
      jobPrePostExec: EVIL,
      usable: false,
    },
    false,
  );
  assert.doesNotMatch(lines(out), CONTROLS, JSON.stringify(out));
  assert.match(out, /Pre-exec +ok\\e\]0;pwned\\x07/);
});

test('the dry run escapes env values, resreq terms, limits and pre/post-exec', () => {
  const out = renderDryRun({
    profile: EVIL,
    profileLabel: EVIL,
    recordedAs: 'x',
    queue: EVIL,
    mode: 'direct',
    launchType: 'serial',
    tasks: 1,
    resreq: [{ text: EVIL, origin: 'job' }],
    env: [{ name: EVIL, value: EVIL, origin: 'job' }],
    limits: [{ name: EVIL, value: EVIL, origin: 'job' }],
    jobPreExec: EVIL,
  });
  assert.doesNotMatch(lines(out), CONTROLS, JSON.stringify(out));
});

test('the submit and watch lines escape the values they quote', () => {
  assert.doesNotMatch(lines(renderSubmitted({ jobId: 7, queue: EVIL, profile: EVIL })), CONTROLS);
  assert.equal(
    renderSubmitted({ jobId: 7, queue: 'normal', profile: 'python' }),
    'Job <7> is submitted to queue <normal> with application profile <python>.\n',
  );
  const pend = renderWatchLine(7, { state: 'PEND', pendReason: EVIL }, '12:00:00', false);
  const end = renderWatchLine(
    7,
    { state: 'EXIT', reason: `job pre-exec failed (output: ${EVIL})`, exitCode: 1 },
    '12:00:01',
    true,
  );
  for (const l of [pend, end]) {
    assert.doesNotMatch(lines(l), CONTROLS, JSON.stringify(l));
    assert.equal(l.split('\n').length, 2, 'one line');
  }
});

test('an error message is printed escaped; its own line breaks stay, each next line indented', () => {
  const m = printableMessage(`job sets its own pre-exec (${EVIL}) but application profile python forbids it`);
  assert.doesNotMatch(m.replaceAll('\n', ''), CONTROLS);
  assert.ok(
    m
      .split('\n')
      .slice(1)
      .every((l) => l.startsWith('  ')),
    "a line break cannot start a line of its own that looks like the program's",
  );
  assert.equal(
    printableMessage('the configuration is invalid; nothing changed:\nxce.yaml:3:1: bad\nrbac.yaml: worse'),
    'the configuration is invalid; nothing changed:\n  xce.yaml:3:1: bad\n  rbac.yaml: worse',
  );
});

test('jobs show of a job whose profile is hidden says so on the profile line; nothing of the profile shows', () => {
  const out = renderJobDetails(
    jobDetailsFixture({
      command: ['./foam.sh'],
      profile: { recorded: 'openfoam', resolved: null, display: 'openfoam', label: null },
      launchType: null,
      resreq: [{ section: 'select', text: 'select[mem>1000]', origin: 'job' }],
      env: [{ value: { name: 'MYVAR', value: 'mine' }, origin: 'job' }],
      profileChangedSinceDispatch: null,
      pendReason: '(hidden: no app:view on profile openfoam)',
      profileValuesHidden: 'hidden: no app:view on profile openfoam',
    }),
    false,
  );
  assert.match(out, /^Profile +openfoam +\(hidden: no app:view on profile openfoam\)$/m);
  assert.match(out, /^Pend reason +\(hidden: no app:view on profile openfoam\)$/m);
  assert.match(out, /MYVAR=mine/);
});

test('an operation named after an Object.prototype property is an unknown operation with its request id', () => {
  for (const op of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
    assert.throws(
      () => parseRequest(JSON.stringify({ id: 31, op, args: {} })),
      (e: unknown) =>
        e instanceof RequestError &&
        e.id === 31 &&
        e.code === 'unknown-op' &&
        e.message.startsWith(`unknown operation "${op}"`),
    );
  }
  assert.equal(requestIdOf('{"id": 5, "op": "x"}'), 5);
  assert.equal(requestIdOf('{"id": -2}'), -1);
  assert.equal(requestIdOf('{"id": '), -1);
  assert.equal(requestIdOf('[1]'), -1);
});
