import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from './log.js';
import { WORKER_EVENTS_LOGGED_MAX, WORKER_LOG_WINDOW_MS, WorkerEventLog } from './worker-log.js';

test('a burst of registrations logs the first ones one by one and the rest in one summary line', () => {
  const lines: string[] = [];
  let now = 1_000;
  const log = createLogger(
    {},
    { sink: { write: (l) => void lines.push(l) }, format: 'json', level: 'info', now: () => now },
  );
  const events = new WorkerEventLog(log, () => now);
  const burst = WORKER_EVENTS_LOGGED_MAX + 2_000;
  for (let i = 0; i < burst; i++) events.registered({ host: `h${i}`, running: 0, version: 'v' });
  events.disconnected('h0');
  assert.equal(
    lines.length,
    WORKER_EVENTS_LOGGED_MAX + 1,
    'one line per host up to the bound, then nothing until the window ends',
  );
  now += WORKER_LOG_WINDOW_MS;
  events.registered({ host: 'late', running: 0, version: 'v' });
  const parsed = lines.map((l) => JSON.parse(l) as { msg: string; host?: string; registered?: number });
  const summary = parsed.find((p) => p.msg.includes('more workers registered'));
  assert.equal(summary?.msg, `2000 more workers registered (not logged one by one)`);
  assert.equal(summary?.registered, burst);
  assert.equal(parsed.at(-1)?.host, 'late', 'a new window logs its first registrations one by one again');
  assert.equal(parsed.filter((p) => p.msg === 'worker disconnected').length, 1);
  events.close();
});
