#!/usr/bin/env node
// `npm test`: type-check (strict, the lint step that cannot be skipped), build, then run every
// node:test file under dist/. Node 20's `node --test` neither expands globs nor picks up .ts files,
// and exits 0 when it finds no test at all, so this script lists the files itself and fails when
// no test ran.
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeBinsExecutable } from './bin-mode.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');
const filter = process.argv.slice(2); // optional path fragments: `npm test -- raft wal`

rmSync(dist, { recursive: true, force: true });
const tsc = spawnSync(
  process.execPath,
  [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.json')],
  {
    stdio: 'inherit',
  },
);
if (tsc.status !== 0) {
  console.error('npm test: the TypeScript check failed (strict mode); fix the errors above.');
  process.exit(1);
}
// dist/ was built from nothing: `npx xcecli` (README) needs its commands executable again.
makeBinsExecutable();
// The launcher's native spawner (daemon/worker/native/xce-spawn.c), when a C compiler is here;
// without one this says so in one line and the tests that need it are skipped.
const native = spawnSync(process.execPath, [join(root, 'scripts/build-native.mjs'), 'dist'], { stdio: 'inherit' });
if (native.status !== 0) {
  console.error('npm test: the native spawner did not compile (the compiler errors are above).');
  process.exit(1);
}

// The folder boundaries (.dependency-cruiser.cjs, README's architecture section) and the format
// (Prettier, .prettierrc.json): both fail the run, naming the file.
const FOLDERS = createRequire(import.meta.url)('./folders.cjs');
const cruise = spawnSync(
  process.execPath,
  [
    join(root, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs'),
    '--config',
    join(root, '.dependency-cruiser.cjs'),
    ...FOLDERS,
  ],
  { stdio: 'inherit', cwd: root },
);
if (cruise.status !== 0) {
  console.error(
    'npm test: an import crosses a folder boundary (see the rule named above and .dependency-cruiser.cjs).',
  );
  process.exit(1);
}
const prettier = spawnSync(
  process.execPath,
  [join(root, 'node_modules/prettier/bin/prettier.cjs'), '--check', '--log-level', 'warn', '**/*.{ts,mjs,cjs}'],
  { stdio: 'inherit', cwd: root },
);
if (prettier.status !== 0) {
  console.error('npm test: files above are not formatted; run `npx prettier --write <file>` (or `npm run format`).');
  process.exit(1);
}

// The size rules (README "Conventions"): no file over 400 lines, no function over 70, outside
// generated code, tests and the listed CLI command builders.
const sizes = spawnSync(process.execPath, [join(root, 'scripts/sizes.mjs')], { stdio: 'inherit', cwd: root });
if (sizes.status !== 0) {
  console.error('npm test: a file or function above is over the size rule (scripts/sizes.mjs); split it.');
  process.exit(1);
}

/** @param {string} dir @returns {string[]} */
function findTests(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...findTests(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}
const files = findTests(dist)
  .filter((f) => filter.length === 0 || filter.some((frag) => relative(dist, f).includes(frag)))
  .sort();
if (files.length === 0) {
  console.error('npm test: no test files found under dist/ (looked for *.test.js); refusing to report success.');
  process.exit(1);
}
// Streamed (so CI shows progress) and captured (to read the runner's summary).
const child = spawn(
  process.execPath,
  ['--test', '--test-concurrency=2', '--test-timeout=600000', '--test-reporter=spec', ...files],
  {
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
let tail = '';
child.stdout.on('data', (d) => {
  process.stdout.write(d);
  tail = (tail + d.toString('utf8')).slice(-4096);
});
const status = await new Promise((resolve) => child.on('close', (code) => resolve(code ?? 1)));
const pass = Number(/ℹ pass (\d+)/.exec(tail)?.[1] ?? 0);
const fail = Number(/ℹ fail (\d+)/.exec(tail)?.[1] ?? 0);
if (status !== 0 || fail > 0) process.exit(status || 1);
if (pass === 0) {
  console.error('npm test: the test runner found no passing test; refusing to report success.');
  process.exit(1);
}
console.log(`${pass} passed, ${fail} failed`);
