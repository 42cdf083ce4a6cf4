import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfChangeType, applyToConf, checkConfChange, decodeConfChange, encodeConfChange } from './confchange.js';

const conf = { voters: [1, 2, 3], learners: [4] };

describe('membership changes', () => {
  it('encode and decode round-trip', () => {
    for (const type of [ConfChangeType.AddVoter, ConfChangeType.AddLearner, ConfChangeType.RemoveNode]) {
      assert.deepEqual(decodeConfChange(encodeConfChange({ type, nodeId: 0xfffffffe })), { type, nodeId: 0xfffffffe });
    }
    assert.throws(() => decodeConfChange(new Uint8Array([9, 0, 0, 0, 0, 0])), RangeError);
  });

  it('promoting a learner makes it a voter', () => {
    assert.deepEqual(applyToConf(conf, { type: ConfChangeType.AddVoter, nodeId: 4 }), {
      voters: [1, 2, 3, 4],
      learners: [],
    });
  });

  it('removal works for voters and learners', () => {
    assert.deepEqual(applyToConf(conf, { type: ConfChangeType.RemoveNode, nodeId: 2 }), {
      voters: [1, 3],
      learners: [4],
    });
    assert.deepEqual(applyToConf(conf, { type: ConfChangeType.RemoveNode, nodeId: 4 }), {
      voters: [1, 2, 3],
      learners: [],
    });
  });

  it('refuses changes that do not apply, saying why', () => {
    assert.match(checkConfChange(conf, { type: ConfChangeType.AddVoter, nodeId: 1 })!.message, /already a voter/);
    assert.match(checkConfChange(conf, { type: ConfChangeType.AddLearner, nodeId: 2 })!.message, /demoting/);
    assert.match(checkConfChange(conf, { type: ConfChangeType.RemoveNode, nodeId: 9 })!.message, /not a member/);
    assert.match(
      checkConfChange({ voters: [1], learners: [] }, { type: ConfChangeType.RemoveNode, nodeId: 1 })!.message,
      /last voter/,
    );
    assert.match(checkConfChange(conf, { type: ConfChangeType.AddVoter, nodeId: 0 })!.message, /node id/);
    assert.equal(checkConfChange(conf, { type: ConfChangeType.AddLearner, nodeId: 5 }), undefined);
  });
});
