// The committed TypeScript of schema/*.capnp is what `npm run gen` makes of it (needs `capnp`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const hasCapnp = spawnSync('capnp', ['--version']).status === 0;

test(
  'schema/*.ts match schema/*.capnp (npm run gen -- --check)',
  { skip: hasCapnp ? false : "the Cap'n Proto compiler `capnp` is not installed (Debian: apt-get install capnproto)" },
  () => {
    const r = spawnSync(process.execPath, ['scripts/gen-capnp.mjs', '--check'], { cwd: root, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /checked 3 schema\(s\)/);
  },
);
