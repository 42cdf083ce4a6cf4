// The public surface of wal/ for the daemon: the log, the snapshot store, their errors and limits.
export { Wal, entriesAfterSnapshot, type WalLogger, type WalOptions, type RecoveredLog } from './wal.js';
export { SnapshotStore, SnapshotWriter, type SnapshotChunk, type StoredSnapshot } from './snapshot-store.js';
export { DataDirLock, LOCK_FILE_NAME } from './lock.js';
export type { SnapshotBase } from './record.js';
export * from './errors.js';
export * as limits from './limits.js';
