import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TurnQueue } from './turn-queue.js';

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

test('a turn queue handles at most its per-turn count each turn, in arrival order', async () => {
  const seen: number[] = [];
  const q = new TurnQueue<number>(3, (n) => seen.push(n));
  for (let i = 0; i < 7; i++) q.push(i);
  assert.deepEqual(seen, [], 'nothing in the turn of the pushes');
  await turn();
  assert.deepEqual(seen, [0, 1, 2]);
  await turn();
  assert.deepEqual(seen, [0, 1, 2, 3, 4, 5]);
  await turn();
  assert.deepEqual(seen, [0, 1, 2, 3, 4, 5, 6]);
  assert.equal(q.size, 0);
  q.push(7);
  await turn();
  assert.deepEqual(seen.at(-1), 7, 'an item pushed after the queue emptied is handled');
});
