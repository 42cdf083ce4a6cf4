// Every folder of the project's code, in layering order: the boundary rules (.dependency-cruiser.cjs)
// and `npm test` (which cruises them) read this one list.
module.exports = [
  'raft',
  'wire',
  'model',
  'wal',
  'statemachine',
  'scheduler',
  'api',
  'daemon',
  'cli',
  'harness',
  'testing',
  'benchmarks',
  'schema',
  'test',
];
