// What `Wal.open` takes: the options (segment size, lock, data directory, where fdatasync runs) and
// the logger through which the WAL tells the operator what they should know, with its default
// (stderr). Re-exported by wal.ts.

/** Where the WAL reports what an operator should know (a torn tail cut, a stale lock broken). */
export interface WalLogger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

export const stderrLogger: WalLogger = {
  info: (msg, fields) => process.stderr.write(`wal: ${msg}${fields ? ' ' + JSON.stringify(fields) : ''}\n`),
  warn: (msg, fields) => process.stderr.write(`wal: WARNING ${msg}${fields ? ' ' + JSON.stringify(fields) : ''}\n`),
};

export interface WalOptions {
  /** Roll over to a new segment once the next record would pass this size (default 64 MiB). */
  readonly segmentBytes?: number;
  readonly logger?: WalLogger;
  /** Take the directory's exclusive lock (default true; false only for tests that inspect files). */
  readonly lock?: boolean;
  /** The node's data directory, named in recovery advice (default: the WAL directory's parent). */
  readonly dataDir?: string;
  /**
   * Run each record's fdatasync on the event loop instead of the thread pool (default false). It
   * saves two thread hand-offs per record, which is about 20% of a lone appender's rate on a disk
   * that flushes in ~140 µs (benchmarks/README.md), but stalls the whole process (timers, sockets)
   * for every flush: choose it only for a disk whose flush latency is far below the heartbeat.
   */
  readonly syncOnEventLoop?: boolean;
  /**
   * Zero-fill the segment being written this many bytes past its last record (default 0: off; the
   * controller uses limits.ts WAL_PREALLOCATE_BYTES_DAEMON). Records then overwrite written zeros
   * inside the file's size instead of growing it, so a record's fdatasync need not write the inode
   * too. Recovery reads an all-zero tail as the clean end of the log (see segment.ts scanSegment).
   */
  readonly preallocateBytes?: number;
}
