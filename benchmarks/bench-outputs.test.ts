// Running a benchmark must not leave `git status` dirty: what a bench writes by default goes under
// benchmarks/results/tmp/ (ignored by git) or outside the tree. The published results beside it
// (benchmarks/results/*.json, *.svg) are written only when a run is given `--out benchmarks/results`
// on purpose. This reads each bench's source (next to the compiled file's folder, in the repository)
// and checks every default output path it names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const sources = fileURLToPath(new URL('../../benchmarks/', import.meta.url));

/** The paths in benchmarks/results a source names as a string: `'benchmarks/results/x.json'` or `join(…, 'results', …)`. */
function resultPaths(text: string): string[] {
  const literal = [...text.matchAll(/['"`](benchmarks\/results\/[^'"`]*)['"`]/g)].map((m) => m[1]!);
  const joined = [...text.matchAll(/join\([^)]*'benchmarks',\s*'results'([^)]*)\)/g)].map(
    (m) => `benchmarks/results${m[1]!.replace(/,\s*'([^']*)'/g, '/$1')}`,
  );
  return [...literal, ...joined];
}

test('every benchmark writes its default output under the ignored benchmarks/results/tmp/', () => {
  const files = readdirSync(sources).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
  assert.ok(files.length > 10, `found only ${files.length} benchmark sources in ${sources}`);
  const gitignore = readFileSync(join(sources, '..', '.gitignore'), 'utf8');
  assert.match(gitignore, /^benchmarks\/results\/tmp\/$/m, '.gitignore must ignore benchmarks/results/tmp/');
  const outside: string[] = [];
  let checked = 0;
  for (const f of files) {
    for (const p of resultPaths(readFileSync(join(sources, f), 'utf8'))) {
      checked++;
      if (p !== 'benchmarks/results/tmp' && !p.startsWith('benchmarks/results/tmp/')) outside.push(`${f}: ${p}`);
    }
  }
  assert.ok(checked >= 8, `only ${checked} default output paths found: the pattern no longer matches the sources`);
  assert.deepEqual(outside, [], 'default outputs that would dirty the tree');
});
