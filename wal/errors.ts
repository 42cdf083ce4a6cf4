// Typed errors of wal/: each says what is wrong, where, and what the operator can do.

/** How to recover a node whose log or snapshot cannot be trusted; repeated in every such error. */
export function recoveryAdvice(dataDir: string): string {
  return (
    `To recover: stop this controller, move its data directory (${dataDir}) aside or remove it, and ` +
    `start it again: it rejoins as an empty follower and the leader catches it up by snapshot. ` +
    `Do this on one controller at a time, only while a majority of the others is healthy.`
  );
}

export class WalError extends Error {
  override name = 'WalError';
}

/** A record that is not a torn tail failed its checks: the node must not start on this log. */
export class WalCorruptionError extends WalError {
  override name = 'WalCorruptionError';
  constructor(
    readonly file: string,
    readonly offset: number,
    readonly expected: string,
    readonly found: string,
    readonly dataDir: string,
  ) {
    super(
      `WAL corruption in ${file} at byte offset ${offset}: expected ${expected}, found ${found}. ` +
        `The log cannot be trusted and this node refuses to start on it. ${recoveryAdvice(dataDir)}`,
    );
  }
}

/** A segment file is missing between two others (or is not where its neighbours say it is). */
export class WalMissingSegmentError extends WalError {
  override name = 'WalMissingSegmentError';
  constructor(
    readonly dir: string,
    readonly expectedFile: string,
    readonly foundFile: string,
    readonly dataDir: string,
  ) {
    super(
      `WAL segment missing in ${dir}: expected ${expectedFile} next, found ${foundFile}. ` +
        `Acknowledged entries may be lost, so this node refuses to start. ${recoveryAdvice(dataDir)}`,
    );
  }
}

/** The caller asked for something Raft never asks for (a gap, a truncation of committed entries...). */
export class WalInvalidSaveError extends WalError {
  override name = 'WalInvalidSaveError';
}

/** An entry or a save exceeds a named limit of limits.ts. */
export class WalLimitError extends WalError {
  override name = 'WalLimitError';
}

/** More bytes are waiting for the disk than PENDING_BYTES_MAX. */
export class WalOverloadedError extends WalError {
  override name = 'WalOverloadedError';
}

/**
 * A write or fdatasync failed. The WAL stops for good (fail-stop): after a failed fsync the kernel
 * may have dropped the dirty pages, so retrying could acknowledge data that is not on disk.
 */
export class WalFailedError extends WalError {
  override name = 'WalFailedError';
  constructor(
    readonly file: string,
    override readonly cause: unknown,
  ) {
    super(
      `WAL write to ${file} failed (${String((cause as Error)?.message ?? cause)}); the log is stopped and ` +
        `acknowledges nothing more. Check the disk (dmesg, free space), then restart the controller.`,
    );
  }
}

export class WalClosedError extends WalError {
  override name = 'WalClosedError';
  constructor() {
    super('the WAL is closed');
  }
}

/** Another live process holds the data directory. */
export class DataDirLockedError extends WalError {
  override name = 'DataDirLockedError';
}

export class SnapshotError extends Error {
  override name = 'SnapshotError';
}

/** The current snapshot's metadata names chunks that the store does not have (or has damaged). */
export class SnapshotCorruptionError extends SnapshotError {
  override name = 'SnapshotCorruptionError';
  constructor(
    readonly location: string,
    readonly detail: string,
    readonly dataDir: string,
  ) {
    super(`snapshot store ${location} is damaged: ${detail}. ${recoveryAdvice(dataDir)}`);
  }
}

/** A streamed snapshot write was used out of order (wrong offset, chunk too large, ...). */
export class SnapshotWriteError extends SnapshotError {
  override name = 'SnapshotWriteError';
}

/** The log starts after the snapshot ends: the entries in between are gone (a lost first segment). */
export class WalGapError extends WalError {
  override name = 'WalGapError';
  constructor(
    readonly dir: string,
    readonly firstIndex: number,
    readonly snapshotIndex: number,
    readonly dataDir: string,
  ) {
    super(
      `WAL in ${dir} starts at entry ${firstIndex} but the latest snapshot ends at ${snapshotIndex}: ` +
        `entries ${snapshotIndex + 1}..${firstIndex - 1} are missing (a segment file was lost). ${recoveryAdvice(dataDir)}`,
    );
  }
}

/** A segment was written in a WAL format this build does not read (a newer release wrote it). */
export class WalVersionError extends WalError {
  override name = 'WalVersionError';
  constructor(
    readonly file: string,
    readonly expected: string,
    readonly found: string,
  ) {
    super(
      `WAL segment ${file} is in ${found}, this build reads ${expected.replace(/^WAL format /, '')}: it was ` +
        `written by another release of XCE. Run the release that wrote it (nothing was changed on disk).`,
    );
  }
}
