// The start message about job identity tells the truth in each of the four cases (issue 20: a root
// worker with --run-as-self said it was "not running as root").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { identityNotices, runsAsSubmitter } from './identity-notice.js';

const say = (root: boolean, runAsSelf: boolean, setprivFound = true) =>
  identityNotices({ root, runAsSelf, self: root ? 'root' : 'alice', setprivFound });

test('root without --run-as-self: each job runs as its submitter', () => {
  assert.deepEqual(say(true, false), [
    { level: 'info', message: 'xcecd is running as root: each job runs as the user who submitted it' },
  ]);
  assert.equal(runsAsSubmitter({ root: true, runAsSelf: false }), true);
  assert.match(say(true, false, false)[1]!.message, /setpriv not found: .*without supplementary groups/);
});

test('root with --run-as-self: it says it is root, and that every job runs as root', () => {
  assert.deepEqual(say(true, true), [
    {
      level: 'warn',
      message:
        'xcecd is running as root with --run-as-self: every job runs as user root, whoever submitted it (development and tests only)',
    },
  ]);
  assert.equal(runsAsSubmitter({ root: true, runAsSelf: true }), false);
});

test('not root, with or without --run-as-self: every job runs as the daemon user', () => {
  assert.deepEqual(say(false, false), [
    {
      level: 'warn',
      message: 'xcecd is not running as root: every job runs as user alice, whoever submitted it (development mode)',
    },
  ]);
  assert.deepEqual(say(false, true), [
    {
      level: 'warn',
      message:
        'xcecd is not running as root (--run-as-self changes nothing then): every job runs as user alice, whoever submitted it (development mode)',
    },
  ]);
  assert.equal(runsAsSubmitter({ root: false, runAsSelf: false }), false);
  for (const root of [true, false])
    for (const self of [true, false])
      assert.doesNotMatch(JSON.stringify(say(root, self)), root ? /not running as root/ : /is running as root/);
});
