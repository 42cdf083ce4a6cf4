// The folder boundaries of README.md's architecture section, checked by `npm test`
// (`depcruise --config .dependency-cruiser.cjs raft wire model ...`). Tests (`*.test.ts`) may
// import anything; everything else follows the layering:
//   raft, wire (pure) ← model (pure) ← statemachine (pure) ← scheduler (pure)
//   raft ← wal;   model ← api;   everything above ← daemon ← cli;   harness: launchers for tests,
//   the drill and `npm run cluster`;   testing: fixtures and generators for tests and benchmarks only.
const TESTS = '\\.test\\.ts$';
const FOLDERS = require('./scripts/folders.cjs');
/** Code in `from` may import only itself, `schema/` and the folders in `mayImport`. */
const layer = (name, from, mayImport, comment) => ({
  name,
  comment,
  severity: 'error',
  from: { path: `^${from}/`, pathNot: TESTS },
  to: { path: `^(${FOLDERS.filter((f) => f !== from && f !== 'schema' && !mayImport.includes(f)).join('|')})/` },
});
const PURE_NODE = [
  'fs',
  'fs/promises',
  'net',
  'http',
  'https',
  'http2',
  'tls',
  'dgram',
  'child_process',
  'worker_threads',
  'cluster',
  'os',
  'readline',
  'timers',
  'timers/promises',
  'perf_hooks',
  'process',
];
const pure = (from) => ({
  name: `${from}-no-io`,
  comment: `${from}/ is pure: no I/O, no clock, no processes (Node's I/O modules and the I/O libraries are for daemon/, wal/ and cli/)`,
  severity: 'error',
  from: { path: `^${from}/`, pathNot: TESTS },
  to: {
    dependencyTypes: ['core', 'npm'],
    path: `^(node:)?(${PURE_NODE.join('|')})$|^(level|classic-level|ws)$|node_modules/(level|classic-level|ws)/`,
  },
});

module.exports = {
  forbidden: [
    layer('raft-alone', 'raft', [], 'raft/ is the consensus core: it imports nothing of the project'),
    layer('wire-alone', 'wire', [], "wire/ (the Cap'n Proto runtime) imports nothing of the project"),
    layer(
      'model-below-state',
      'model',
      ['wire'],
      'model/ (profiles, config, resreq, merge, RBAC) never sees the replicated state',
    ),
    layer(
      'statemachine-pure',
      'statemachine',
      ['raft', 'wire', 'model'],
      'statemachine/ is replicated state and apply: no storage, transport or tools',
    ),
    layer(
      'scheduler-pure',
      'scheduler',
      ['raft', 'wire', 'model', 'statemachine'],
      'scheduler/ is the pure placement pass',
    ),
    layer('wal-storage', 'wal', ['raft'], 'wal/ stores Raft entries and snapshots: it knows raft/ types only'),
    layer('api-contract', 'api', ['model', 'statemachine'], 'api/ is the client contract shared by server and client'),
    layer(
      'daemon-below-tools',
      'daemon',
      ['raft', 'wire', 'model', 'wal', 'statemachine', 'scheduler', 'api'],
      'daemon/ is the processes: never the CLI, the harness or test code',
    ),
    layer(
      'cli-top',
      'cli',
      ['raft', 'wire', 'model', 'wal', 'statemachine', 'scheduler', 'api', 'daemon', 'harness'],
      'cli/ is the top: it may use daemon/ code (config files) and the harness (the drill), no test code',
    ),
    layer(
      'harness-no-tests',
      'harness',
      ['raft', 'wire', 'model', 'wal', 'statemachine', 'scheduler', 'api', 'daemon', 'cli'],
      'harness/ is shipped with the drill: no test code',
    ),
    pure('raft'),
    pure('wire'),
    pure('model'),
    pure('statemachine'),
    pure('scheduler'),
    {
      name: 'no-circular',
      comment: 'no import cycles outside tests',
      severity: 'error',
      from: { pathNot: TESTS },
      to: { circular: true, pathNot: TESTS },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
