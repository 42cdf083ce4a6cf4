// What a save must respect before the WAL takes it: integer fields, terms and votes that never go
// back, commit never going back, no committed entry rewritten, entry size limits, and the log's
// own rules (log-image.ts). A refusal is a caller bug (WalInvalidSaveError) or a limit.
import type { Entry, HardState } from '../raft/types.js';
import { WalInvalidSaveError, WalLimitError } from './errors.js';
import { ENTRY_DATA_BYTES_MAX, INDEX_MAX } from './limits.js';
import type { LogImage } from './log-image.js';
import { OpKind } from './record.js';

type WalError = WalInvalidSaveError | WalLimitError;

export function isIndex(n: number): boolean {
  return Number.isInteger(n) && n >= 0 && n <= INDEX_MAX;
}

/** Checks a save against the accepted log and applies it there; returns the refusal, if any. */
export function acceptSave(
  accepted: LogImage,
  hardState: HardState | undefined,
  entries: readonly Entry[],
): Error | undefined {
  if (hardState) {
    const prev = accepted.hardState;
    if (!isIndex(hardState.term) || !isIndex(hardState.vote) || !isIndex(hardState.commit)) {
      return new WalInvalidSaveError(
        `hard state fields must be integers in [0, 2^53-1], found ${JSON.stringify(hardState)}`,
      );
    }
    if (hardState.term < prev.term)
      return new WalInvalidSaveError(
        `hard state term ${hardState.term} is below the saved term ${prev.term}; a term never goes back`,
      );
    if (hardState.term === prev.term && prev.vote !== 0 && hardState.vote !== prev.vote) {
      return new WalInvalidSaveError(
        `hard state changes the vote of term ${prev.term} from ${prev.vote} to ${hardState.vote}; one vote per term (Raft §5.2)`,
      );
    }
    if (hardState.commit < prev.commit)
      return new WalInvalidSaveError(
        `hard state commit ${hardState.commit} is below the saved commit ${prev.commit}; commit never goes back`,
      );
  }
  if (entries.length > 0) {
    const err = checkEntries(accepted, entries);
    if (err) return err;
  }
  if (hardState) accepted.apply({ kind: OpKind.HardState, hardState });
  return undefined;
}

/** Checks entries against the accepted log and, when they pass, applies them to it. */
function checkEntries(accepted: LogImage, entries: readonly Entry[]): WalError | undefined {
  const first = entries[0]!.index;
  for (const e of entries) {
    if (!isIndex(e.index) || !isIndex(e.term) || e.index < 1)
      return new WalInvalidSaveError(
        `entry index and term must be integers in [1, 2^53-1], found index ${e.index} term ${e.term}`,
      );
    if (e.data.length > ENTRY_DATA_BYTES_MAX)
      return new WalLimitError(
        `entry ${e.index} holds ${e.data.length} B of data, over ENTRY_DATA_BYTES_MAX (${ENTRY_DATA_BYTES_MAX} B)`,
      );
  }
  // Raft never rewrites a committed entry: refuse a save that would (a caller bug, not a disk fault).
  const committed = Math.min(accepted.hardState.commit, accepted.lastIndex);
  for (let i = first; i <= committed && i - first < entries.length; i++) {
    const had = accepted.termAt(i);
    const term = entries[i - first]!.term;
    if (had !== undefined && had !== term) {
      return new WalInvalidSaveError(
        `save would replace committed entry ${i} (term ${had}) with term ${term}; committed entries are never truncated`,
      );
    }
  }
  const rule = accepted.apply({ kind: OpKind.Entries, entries });
  if (rule) return new WalInvalidSaveError(`save refused: expected ${rule}`);
  return undefined;
}
