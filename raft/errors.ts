// Typed errors of the Raft core. Each says what is wrong and what the caller can do about it.

/** A broken internal invariant: a bug in the core (or a caller that broke the Ready/advance
 * contract). The simulator treats it as a failure and prints the seed. Never caught in the core. */
export class RaftInvariantError extends Error {
  override readonly name = 'RaftInvariantError';
}

/** `validateConfig()` refused a configuration: `field` names the setting, the message says why
 * and what would be accepted. */
export class RaftConfigError extends Error {
  override readonly name = 'RaftConfigError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`raft config ${field}: ${message}`);
  }
}

/** The requested index is below the storage's first index: it was compacted into a snapshot. */
export class LogCompactedError extends Error {
  override readonly name = 'LogCompactedError';
  constructor(
    readonly index: number,
    readonly firstIndex: number,
  ) {
    super(`raft log index ${index} is compacted (first available index is ${firstIndex}); use the snapshot`);
  }
}

/** The requested index is above the storage's last index. */
export class LogUnavailableError extends Error {
  override readonly name = 'LogUnavailableError';
  constructor(
    readonly index: number,
    readonly lastIndex: number,
  ) {
    super(`raft log index ${index} is not available (last index is ${lastIndex})`);
  }
}

/** A snapshot older than the one storage already holds was offered to it. */
export class SnapshotOutOfDateError extends Error {
  override readonly name = 'SnapshotOutOfDateError';
  constructor(
    readonly index: number,
    readonly currentIndex: number,
  ) {
    super(`snapshot at index ${index} is older than the stored snapshot at index ${currentIndex}`);
  }
}

/** Storage cannot hand out a snapshot right now (it is being built); the core retries later. */
export class SnapshotTemporarilyUnavailableError extends Error {
  override readonly name = 'SnapshotTemporarilyUnavailableError';
  constructor() {
    super('snapshot is temporarily unavailable (being built); the leader will retry on a later heartbeat');
  }
}

export function assert(condition: boolean, what: string): asserts condition {
  if (!condition) throw new RaftInvariantError(`raft invariant violated: ${what}`);
}
