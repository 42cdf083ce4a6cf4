// The public surface of the Raft core.
export * from './types.js';
export * from './config.js';
export * from './errors.js';
export * from './message.js';
export * from './prng.js';
export * from './storage.js';
export * from './log.js';
export * from './progress.js';
export * from './quorum.js';
export * from './confchange.js';
export * from './readonly.js';
export * from './raft.js';
export * from './rawnode.js';
export * from './snapshot-chunks.js';
