// Random credential facts and credential state (issue 19), at the extremes the schema allows, for
// facts-arbitrary.ts and state-arbitrary.ts: the codec property test and the snapshot round trip draw them.
import fc from 'fast-check';
import type { CredentialFact } from '../statemachine/facts.js';
import type { HostCredentialState } from '../statemachine/state.js';

const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.constant(''), fc.constant('\u0000'));
const u32 = fc.nat({ max: 2 ** 32 - 1 });
const i64 = fc.maxSafeInteger();

export const arbCredentialFact: fc.Arbitrary<CredentialFact> = fc.record(
  {
    kind: fc.constant('credential' as const),
    action: fc.constantFrom('revokeHost' as const, 'enrollHost' as const, 'revokeToken' as const),
    name: text,
    untilMs: i64,
    user: text,
  },
  { noNullPrototype: true },
);

/** Hosts' credential states and revoked tokens, as the snapshot holds them. */
export const arbCredentialMaps: fc.Arbitrary<[Array<[string, HostCredentialState]>, Array<[string, number]>]> =
  fc.tuple(
    fc.uniqueArray(fc.tuple(text, fc.record({ epoch: u32, revoked: fc.boolean() }, { noNullPrototype: true })), {
      selector: (h) => h[0],
      maxLength: 4,
    }),
    fc.uniqueArray(fc.tuple(text, i64), { selector: (t) => t[0], maxLength: 4 }),
  );
