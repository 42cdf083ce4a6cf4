// In-memory log and snapshot stores over a `MemoryDisk` that outlives a simulated crash: the
// deterministic simulator's stand-ins for the WAL and the LevelDB snapshot store (ports.ts). One file
// per piece: memory-disk.ts (the disk, durability and crashes), memory-log-store.ts (the WAL's
// contract), memory-snapshot-store.ts (the snapshot store's); this file re-exports them.

export { MemoryDisk, MemoryDiskError, type MemoryDiskOptions, type MemoryDiskStats } from './memory-disk.js';
export { MemoryLogStore } from './memory-log-store.js';
export { MemorySnapshotStore } from './memory-snapshot-store.js';
