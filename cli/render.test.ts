// Another user's job name, command or failure reason (which may quote the job's own output) reaches
// your terminal through `jobs list` / `jobs show`: control characters in it must be shown, never
// obeyed (a title change, a cleared screen, a cursor moved over earlier lines, a faked prompt).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { printable } from './output.js';
import { renderAppList, renderClusterStatus, renderJobDetails, renderJobList } from './render.js';
import { jobDetailsFixture } from '../testing/job-details.js';

/** Every C0 control but none spared, DEL, and every C1 control (U+0080..U+009F). */
const CONTROLS = /[\u0000-\u001f\u007f\u0080-\u009f]/;
const EVIL = 'ok\x1b]0;pwned\x07\x1b[2J\x1b[1A\rroot# \x00\x7f\u009b31m\ttab\nline2';

function withoutOwnNewlines(text: string): string {
  return text.replaceAll('\n', '');
}

test('control characters are shown escaped: ESC as \\e, C0 and DEL as \\xHH, C1 as \\u00HH', () => {
  assert.equal(printable('a\x1b[31mb'), 'a\\e[31mb');
  assert.equal(printable('\r\n\t\x00\x07\x7f'), '\\r\\n\\t\\x00\\x07\\x7f');
  assert.equal(printable('\u009b\u0085'), '\\u009b\\u0085');
  assert.equal(printable('plain text, ünïcødé and € stay'), 'plain text, ünïcødé and € stay');
  assert.doesNotMatch(printable(EVIL), CONTROLS);
});

test("jobs list shows another user's escape sequences in name, command and reason as text", () => {
  const out = renderJobList(
    {
      jobs: [
        {
          id: 7,
          user: 'mallory\x1b[8m',
          state: 'EXIT',
          queue: 'normal',
          app: 'serial',
          hosts: 'n1:1',
          submitTimeMs: 1,
          command: `/bin/echo ${EVIL}`,
          reason: `job pre-exec exited with code 1 (output: ${EVIL})`,
        },
        {
          id: 8,
          user: 'mallory',
          state: 'PEND',
          queue: 'normal',
          app: 'serial',
          hosts: '',
          submitTimeMs: 1,
          command: 'x',
          pendReason: EVIL,
        },
      ],
    },
    false,
  );
  assert.doesNotMatch(withoutOwnNewlines(out), CONTROLS, JSON.stringify(out));
  assert.equal(out.split('\n').length, 4, 'one line per job under the header: a newline in a value is not a new row');
  assert.match(out, /ok\\e\]0;pwned\\x07\\e\[2J/);
});

test('jobs show shows the name, command, env and record escaped', () => {
  const out = renderJobDetails(
    jobDetailsFixture({
      state: 'RUN',
      user: 'mallory',
      name: `name${EVIL}`,
      command: ['/bin/echo', EVIL],
      profile: { display: `serial${EVIL}`, label: 'serial@1' },
      resreq: [{ text: `select[${EVIL}]`, origin: 'job' }],
      env: [{ value: { name: 'X', value: EVIL }, origin: 'job' }],
      record: { hosts: [{ host: 'n1', tasks: 1 }], limits: {}, jobPreExec: EVIL },
      recordLabel: 'serial@1',
      runNumber: 1,
    }),
    true, // the bold header's own escape sequences are ours
  );
  const ours = out.replaceAll('\x1b[1m', '').replaceAll('\x1b[0m', '');
  assert.doesNotMatch(withoutOwnNewlines(ours), CONTROLS, JSON.stringify(out));
});

test('apps list and cluster status escape what they show', () => {
  assert.doesNotMatch(
    withoutOwnNewlines(
      renderAppList(
        {
          apps: [
            {
              name: EVIL,
              label: 'x',
              mode: 'direct',
              launchType: 'serial',
              aliases: [EVIL],
              usable: true,
              description: EVIL,
            },
          ],
        },
        false,
      ),
    ),
    CONTROLS,
  );
  assert.doesNotMatch(
    withoutOwnNewlines(
      renderClusterStatus(
        { leader: 1, leaderAddress: EVIL, members: [{ id: 1, address: EVIL, role: 'voter' }], jobs: {} },
        false,
      ),
    ),
    CONTROLS,
  );
});
