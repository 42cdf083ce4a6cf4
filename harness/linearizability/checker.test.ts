// The checker on known good and known bad histories of the job table.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkLinearizable, type Model, type Operation } from './checker.js';
import { jobTableModel, listOp, showOp, submitOp } from './job-table.js';

/** A completed list that saw `jobs` (`name:id`, newest first, space separated). */
const listed = (jobs: string, invoke_ms: number, complete_ms: number): Operation =>
  listOp(
    jobs.split(' ').map((j): [string, number] => [j.split(':')[0]!, Number(j.split(':')[1])]),
    invoke_ms,
    complete_ms,
  );

const check = (h: Operation[], stepsMax?: number) =>
  checkLinearizable(jobTableModel as Model<unknown>, h, stepsMax === undefined ? {} : { stepsMax });

test('a sequential history of submits and reads is linearizable', () => {
  const r = check([
    submitOp('a', 1, 0, 10),
    listOp([['a', 1]], 11, 20),
    submitOp('b', 2, 21, 30),
    listed('b:2 a:1', 31, 40),
    showOp(2, 'b', 41, 42),
    showOp(3, null, 43, 44),
  ]);
  assert.equal(r.verdict, 'linearizable');
});

test('a history that LOSES AN ACKNOWLEDGED WRITE is rejected', () => {
  // b was acknowledged (completed at 30); a read that began after that does not see it.
  const r = check([submitOp('a', 1, 0, 10), submitOp('b', 2, 20, 30), listOp([['a', 1]], 40, 50)]);
  assert.equal(r.verdict, 'illegal');
  assert.match(r.verdict === 'illegal' ? r.explanation : '', /misses b \(job 2\)/);
});

test('a lost write is rejected even when a later read sees it again (a flapping table)', () => {
  const r = check([submitOp('a', 1, 0, 10), listOp([['a', 1]], 20, 30), listOp([], 40, 50)]);
  assert.equal(r.verdict, 'illegal');
});

test('a stale read after a completed write is rejected', () => {
  const r = check([submitOp('a', 1, 0, 10), showOp(1, null, 15, 20)]);
  assert.equal(r.verdict, 'illegal');
  assert.match(r.verdict === 'illegal' ? r.explanation : '', /exists but the read said it does not/);
});

test('a read that sees a submit which had not begun by its end is rejected', () => {
  const r = check([listOp([['a', 1]], 0, 10), submitOp('a', 1, 20, 30)]);
  assert.equal(r.verdict, 'illegal');
});

test('concurrent overlapping operations are accepted in either order', () => {
  // A read concurrent with a submit may see it or not; two reads, each concurrent with it, may disagree
  // as long as the one that saw it does not precede the one that did not.
  for (const saw of [true, false]) {
    const r = check([submitOp('a', 1, 0, 100), listOp(saw ? [['a', 1]] : [], 10, 20)]);
    assert.equal(r.verdict, 'linearizable', `read ${saw ? 'sees' : 'misses'} the concurrent submit`);
  }
  assert.equal(
    check([submitOp('a', 1, 0, 100), listOp([], 10, 20), listOp([['a', 1]], 30, 40)]).verdict,
    'linearizable',
  );
  assert.equal(
    check([submitOp('a', 1, 0, 100), listOp([['a', 1]], 10, 20), listOp([], 30, 40)]).verdict,
    'illegal',
    'once seen, never unseen',
  );
  // Two concurrent submits: ids fix their order, whatever the order of the calls.
  assert.equal(
    check([submitOp('x', 2, 0, 50), submitOp('y', 1, 5, 40), listed('x:2 y:1', 60, 70)]).verdict,
    'linearizable',
  );
});

test('ids must be unique and increase in log order', () => {
  assert.equal(
    check([submitOp('a', 2, 0, 10), submitOp('b', 1, 20, 30)]).verdict,
    'illegal',
    'a later submit got a smaller id',
  );
  assert.equal(check([submitOp('a', 1, 0, 10), submitOp('b', 1, 20, 30)]).verdict, 'illegal', 'one id given twice');
});

test('a submit applied twice is rejected', () => {
  assert.equal(check([submitOp('a', 1, 0, 10), listed('a:2 a:1', 20, 30)]).verdict, 'illegal');
});

test('a read that shows a job nobody submitted is rejected', () => {
  assert.equal(check([listOp([['ghost', 7]], 0, 10)]).verdict, 'illegal');
});

test('a pending op that took effect is accepted; one that did not is accepted too', () => {
  // The client gave up on a (no answer), but a later read shows it: it took effect.
  assert.equal(
    check([
      submitOp('a', null, 0, null),
      listOp([['a', 1]], 50, 60),
      submitOp('b', 2, 70, 80),
      listed('b:2 a:1', 90, 95),
    ]).verdict,
    'linearizable',
  );
  // It never shows up: it did not take effect (or took effect after the end).
  assert.equal(
    check([submitOp('a', null, 0, null), listOp([], 50, 60), submitOp('b', 1, 70, 80), listOp([['b', 1]], 90, 95)])
      .verdict,
    'linearizable',
  );
  // But a pending op may not appear and then vanish.
  assert.equal(
    check([submitOp('a', null, 0, null), listOp([['a', 1]], 50, 60), listOp([], 70, 80)]).verdict,
    'illegal',
  );
});

test('the search is bounded: a step budget ends it with inconclusive, not a hang', () => {
  // 14 fully concurrent submits and a read that must not see one of them that did not exist: the
  // search must try many orders before it can refuse; a tiny budget stops it first.
  const h: Operation[] = [];
  for (let i = 1; i <= 14; i++) h.push(submitOp(`m${i}`, i, 0, 1000));
  h.push(listOp([['nobody', 99]], 0, 1000));
  const r = check(h, 50);
  assert.equal(r.verdict, 'inconclusive');
  assert.match(r.verdict === 'inconclusive' ? r.reason : '', /after 50 steps/);
});

test('a long history with many concurrent clients is checked quickly by memoization', () => {
  // 8 clients, 2,000 submits and 500 reads, heavily overlapping, generated from a real sequential order.
  const h: Operation[] = [];
  let t = 0;
  let id = 0;
  const table: Array<[string, number]> = [];
  const clients = 8;
  const open: Array<{ start: number; make: (end: number) => Operation }> = [];
  for (let k = 0; k < 2500; k++) {
    t += 1;
    // The effect happens at t; the call started up to 7 ticks before and returns up to 7 after.
    const start = t - (k % clients) * 0.9;
    if (k % 5 === 4) {
      const snapshot = [...table].reverse();
      open.push({ start, make: (end) => listOp(snapshot, start, end) });
    } else {
      const m = `m${k}`;
      const myId = ++id;
      table.push([m, myId]);
      open.push({ start, make: (end) => submitOp(m, myId, start, end) });
    }
    for (const o of open.splice(0)) h.push(o.make(t + ((k * 7) % clients) * 0.9));
  }
  const r = check(h);
  assert.equal(r.verdict, 'linearizable');
  assert.equal(r.operations, 2500);
});
