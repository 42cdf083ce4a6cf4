import { test } from 'node:test';
import assert from 'node:assert/strict';
import { notLeaderReply } from './not-leader.js';

const node = (lead: number) => ({
  id: 2,
  leaderId: () => lead,
  addressOf: (id: number) => (id === 1 ? 'ctl1:7101' : null),
});

test("a follower that knows the leader answers not-leader with the leader's id and address", () => {
  assert.deepEqual(notLeaderReply(node(1)), {
    code: 'not-leader',
    message: 'node 2 is not the leader; the leader is node 1 at ctl1:7101',
    leader: { id: 1, address: 'ctl1:7101' },
  });
});

test('a node that knows no leader, or not its address, answers no-leader', () => {
  for (const reply of [notLeaderReply(node(0)), notLeaderReply(node(3))]) {
    assert.equal(reply.code, 'no-leader');
    assert.equal(reply.leader, undefined);
    assert.match(reply.message, /no leader right now .* retry shortly/);
  }
});

test('the leader a refusal named is the one answered, not the node’s view now', () => {
  assert.equal(notLeaderReply(node(0), 1).leader?.address, 'ctl1:7101');
});
