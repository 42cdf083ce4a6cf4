// Every bound of wal/, once, with its unit. A value here is part of the on-disk contract only where
// its comment says so; the others bound memory and latency and may change between releases.

const MiB = 1024 * 1024;

/** A segment file rolls over once the next record would take it past this size. */
export const SEGMENT_BYTES_DEFAULT = 64 * MiB;
/** Smallest configurable segment size (tests use tiny segments to exercise roll-over). */
export const SEGMENT_BYTES_MIN = 4 * 1024;
/** Largest configurable segment size: a segment is read whole into memory at start-up. */
export const SEGMENT_BYTES_MAX = 1024 * MiB;

/** One record's payload, at most (on-disk contract: a reader refuses a larger length field). */
export const RECORD_PAYLOAD_BYTES_MAX = 16 * MiB;
/** One entry's opaque data, at most; leaves room for framing inside one record. */
export const ENTRY_DATA_BYTES_MAX = 8 * MiB;
/** Entries one `save()` may carry, at most (a Raft ready batch is far smaller). */
export const SAVE_ENTRIES_MAX = 1_000_000;
/**
 * Bytes accepted but not yet durable, at most: past this `save()` refuses with WalOverloadedError
 * instead of growing the queue without bound (the disk is not keeping up).
 */
export const PENDING_BYTES_MAX = 1024 * MiB;

/**
 * Records up to this size are written with a synchronous write() on the event loop (a copy into the
 * page cache); larger ones go through the thread pool so the event loop never stalls on them.
 */
export const WRITE_INLINE_BYTES_MAX = 256 * 1024;

/**
 * How far past its last record the controller's WAL zero-fills the segment it writes
 * (WalOptions.preallocateBytes). A record then overwrites blocks that are already allocated and
 * inside the file's size, so its fdatasync flushes the data alone, not the inode as well; one
 * record in this many bytes pays for writing and flushing the zeros.
 */
export const WAL_PREALLOCATE_BYTES_DAEMON = 1 * MiB;

/** Indices and terms are stored as u64 but must stay exact in a JS number. */
export const INDEX_MAX = Number.MAX_SAFE_INTEGER;

/** Snapshot chunks as the store cuts them when given a whole snapshot. */
export const SNAPSHOT_CHUNK_BYTES_DEFAULT = 1 * MiB;
/** One snapshot chunk, at most (as written by a leader's InstallSnapshot stream). */
export const SNAPSHOT_CHUNK_BYTES_MAX = 16 * MiB;
/** One snapshot, at most. */
export const SNAPSHOT_BYTES_MAX = 64 * 1024 * MiB;

/** A lock file whose content cannot be parsed is presumed abandoned once older than this. */
export const LOCK_UNPARSABLE_STALE_MS = 10_000;
