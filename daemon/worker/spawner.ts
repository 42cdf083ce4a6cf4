// Which way the launcher starts job layers (xcecd --spawner): `native`, the fork server
// native/xce-spawn (native-spawner.ts), built by scripts/build-native.mjs when a C compiler is
// there; `node`, Node's spawn (and the /bin/sh wrapper for a job with a memory or cpu limit);
// `auto`, native when the program is there and runs, else node.

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const SPAWNER_MODES = ['auto', 'native', 'node'] as const;
export type SpawnerMode = (typeof SPAWNER_MODES)[number];

/** The native spawner's program, next to the compiled launcher (as launcher.ts finds launcher-main.js). */
export const NATIVE_SPAWNER = fileURLToPath(new URL('./native/xce-spawn', import.meta.url));

export class SpawnerError extends Error {
  override readonly name = 'SpawnerError';
}

/** Null when `path` is xce-spawn and runs (`--version`), else why not. */
export function nativeProblem(path: string): string | null {
  const r = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error !== undefined) {
    const code = (r.error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? 'is not there (built only where a C compiler, cc, was found)' : `does not run (${code})`;
  }
  if (r.status !== 0 || !r.stdout.startsWith('xce-spawn '))
    return `does not run (exit ${r.status}: ${r.stderr.trim()})`;
  return null;
}

/** The native spawner's path, or null for Node's spawn, and the log line saying which and why. */
export function chooseSpawner(mode: SpawnerMode, path = NATIVE_SPAWNER): { path: string | null; line: string } {
  if (mode === 'node') return { path: null, line: "spawner: node (Node's spawn; --spawner node)" };
  const problem = nativeProblem(path);
  if (problem === null) return { path, line: `spawner: native (${path})` };
  if (mode === 'native')
    throw new SpawnerError(
      `--spawner native: ${path} ${problem}; build it with \`node scripts/build-native.mjs\` or use --spawner auto`,
    );
  return { path: null, line: `spawner: node (the native spawner ${path} ${problem})` };
}
