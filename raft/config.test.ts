import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultConfig, validateConfig } from './config.js';
import { RaftConfigError } from './errors.js';

function refused(over: Parameters<typeof defaultConfig>[1], field: string): void {
  assert.throws(
    () => validateConfig(defaultConfig(1, over)),
    (e: unknown) => e instanceof RaftConfigError && e.field === field,
  );
}

describe('validateConfig', () => {
  it('accepts the defaults', () => {
    validateConfig(defaultConfig(1));
  });

  it('refuses unsafe or unworkable combinations, naming the setting', () => {
    refused({ id: 0 }, 'id');
    refused({ electionTicks: 1, heartbeatTicks: 1 }, 'electionTicks');
    refused({ maxInflightBytes: 10, maxSizePerMsgBytes: 100 }, 'maxInflightBytes');
    refused({ maxInflightMsgs: 0 }, 'maxInflightMsgs');
    refused({ readOnlyOption: 'lease-based', checkQuorum: false }, 'readOnlyOption');
    refused({ maxProposalBytes: 100, maxUncommittedEntriesBytes: 10 }, 'maxProposalBytes');
    refused({ applied: -1 }, 'applied');
  });

  it('lease-based reads are off by default', () => {
    assert.equal(defaultConfig(1).readOnlyOption, 'safe');
    assert.equal(defaultConfig(1).preVote, true);
    assert.equal(defaultConfig(1).checkQuorum, true);
  });
});
