import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { VoteResult, committedIndex, majority, quorumActive, voteResult } from './quorum.js';

describe('quorum', () => {
  it('majorities', () => {
    assert.deepEqual([1, 2, 3, 4, 5].map(majority), [1, 2, 2, 3, 3]);
  });

  it('the committed index is the highest index a majority holds (for all match vectors)', () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 50 }), { minLength: 1, maxLength: 7 }), (matches) => {
        const voters = matches.map((_, i) => i + 1);
        const ci = committedIndex(voters, (id) => matches[id - 1]!);
        const holders = (idx: number) => matches.filter((m) => m >= idx).length;
        assert.ok(holders(ci) >= majority(matches.length));
        assert.ok(holders(ci + 1) < majority(matches.length));
      }),
    );
  });

  it('vote tallies: won, lost, pending', () => {
    const v = [1, 2, 3];
    assert.equal(voteResult(v, new Map([[1, true]])), VoteResult.Pending);
    assert.equal(
      voteResult(
        v,
        new Map([
          [1, true],
          [2, true],
        ]),
      ),
      VoteResult.Won,
    );
    assert.equal(
      voteResult(
        v,
        new Map([
          [1, true],
          [2, false],
          [3, false],
        ]),
      ),
      VoteResult.Lost,
    );
    assert.equal(
      voteResult(
        v,
        new Map([
          [9, true],
          [1, true],
        ]),
      ),
      VoteResult.Pending,
      'a non-voter never counts',
    );
  });

  it('quorum activity', () => {
    assert.ok(quorumActive([1, 2, 3], (id) => id !== 3));
    assert.ok(!quorumActive([1, 2, 3, 4], (id) => id <= 2));
  });
});
