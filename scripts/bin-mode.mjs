// Makes the package's commands (package.json `bin`: xcectld, xcecd, xcecli, xceadmin) executable
// after a build: `npx xcecli` runs dist/cli/xcecli.js itself, and tsc writes new files without the
// execute bit (npm test and a fresh clone build dist/ from nothing). Run by `npm start`, `npm run
// cluster`, `npm run build` and npm test (scripts/test.mjs).
import { chmodSync, existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** chmod 0755 every `bin` target of package.json that exists; returns the paths changed. */
export function makeBinsExecutable() {
  const { bin } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const done = [];
  for (const target of Object.values(bin ?? {})) {
    const path = join(root, target);
    if (!existsSync(path)) continue;
    chmodSync(path, 0o755);
    done.push(path);
  }
  return done;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) makeBinsExecutable();
