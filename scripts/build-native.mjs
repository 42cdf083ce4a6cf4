#!/usr/bin/env node
// Builds the worker launcher's native spawner, daemon/worker/native/xce-spawn.c, next to the
// compiled launcher: <outDir>/daemon/worker/native/xce-spawn (outDir: the first argument, default
// dist). It is optional: without a C compiler (`cc`, or $CC) this says so in one line and exits 0,
// and xcecd starts jobs with Node's spawn as before (xcecd --spawner, daemon/worker/spawner.ts).
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outDir = join(resolve(root, process.argv[2] ?? 'dist'), 'daemon/worker/native');
const source = join(root, 'daemon/worker/native/xce-spawn.c');
const target = join(outDir, 'xce-spawn');
const cc = process.env.CC ?? 'cc';

mkdirSync(outDir, { recursive: true });
rmSync(target, { force: true }); // never a stale binary from an older source
const r = spawnSync(cc, ['-std=c99', '-Wall', '-Wextra', '-O2', '-o', target, source], { stdio: 'inherit' });
if (r.error !== undefined) {
  console.log(`build-native: no C compiler (${cc}): xce-spawn not built; xcecd uses Node's spawn`);
} else if (r.status !== 0) {
  console.error(`build-native: ${cc} failed on ${source} (exit ${r.status})`);
  process.exit(1);
}
