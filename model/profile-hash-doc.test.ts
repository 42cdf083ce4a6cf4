// The "Content hash" section of schema/README.md, checked as written: its worked example's YAML
// loads into a profile whose hash is the documented one, the documented text form is the one XCE
// writes for that profile, and the canonical bytes (committed, made by `capnp` from that text) are
// the encoder's and hash to the documented value. Where `capnp` is installed, the documented
// command itself is run on the documented text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadConfig } from './config.js';
import { profileCanonicalBytes, profileHash, profileLabel } from './profile-hash.js';
import { profileCapnpText } from './profile-capnp-text.js';

const ROOT = new URL('../../', import.meta.url);
const README = readFileSync(new URL('schema/README.md', ROOT), 'utf8');
const SCHEMA = fileURLToPath(new URL('schema/profile.capnp', ROOT));
const FIXTURE = new URL('schema/fixtures/content-hash-example.bin', ROOT);
const CAPNP_MISSING =
  spawnSync('capnp', ['--version'], { encoding: 'utf8' }).status !== 0
    ? 'capnp is not installed (Debian: capnproto); the committed bytes still check the example'
    : false;

/** The fenced block right after `<!-- content-hash-example:KIND -->`. */
function block(kind: string): string {
  const m = new RegExp(`<!-- content-hash-example:${kind} -->\\n\`\`\`[a-z]*\\n([\\s\\S]*?)\`\`\``).exec(README);
  assert.ok(m, `schema/README.md has the ${kind} block of the worked example`);
  return m[1] as string;
}

const documentedHash = (/^([0-9a-f]{64}) {2}-$/m.exec(block('hash')) ?? [])[1];

/** Whitespace outside string literals removed: the text form's tokens, however it is laid out. */
function tokens(text: string): string {
  return text.replace(/("(?:[^"\\]|\\.)*")|\s+/g, (_, s: string | undefined) => s ?? '');
}

function exampleProfile() {
  const shipped = (f: string) => readFileSync(new URL(`configs/${f}`, ROOT), 'utf8');
  const r = loadConfig([
    { path: 'xce.yaml', text: shipped('xce.yaml').replace(/default_application: .*/, 'default_application: cfd') },
    { path: 'queues.yaml', text: shipped('queues.yaml') },
    { path: 'resources.yaml', text: shipped('resources.yaml') },
    { path: 'applications.yaml', text: block('yaml') },
  ]);
  assert.ok(r.ok, r.ok ? '' : JSON.stringify(r.errors));
  const p = r.config.profiles.get('cfd');
  assert.ok(p);
  return p;
}

test('the worked example: the YAML hashes to the documented value and label', () => {
  assert.match(documentedHash ?? '', /^[0-9a-f]{64}$/, 'the section shows a full SHA-256');
  const p = exampleProfile();
  assert.equal(profileHash(p), documentedHash);
  assert.ok(README.includes(`\`${profileLabel('cfd', profileHash(p))}\``), 'the section names the short label');
});

test('the worked example: the documented text form is the one XCE writes for the profile', () => {
  assert.equal(tokens(block('text')), tokens(profileCapnpText(exampleProfile())));
});

test("the worked example: capnp's canonical bytes are the encoder's, and their SHA-256 is the documented hash", () => {
  const fixture = readFileSync(FIXTURE);
  assert.deepEqual(Buffer.from(profileCanonicalBytes(exampleProfile())), fixture);
  assert.equal(createHash('sha256').update(fixture).digest('hex'), documentedHash);
});

test('the worked example: the documented command gives the documented hash', { skip: CAPNP_MISSING }, () => {
  const r = spawnSync('capnp', ['convert', 'text:canonical', SCHEMA, 'AppProfile'], {
    input: block('text'),
    timeout: 60_000,
  });
  assert.equal(r.status, 0, r.stderr?.toString());
  assert.deepEqual(r.stdout, readFileSync(FIXTURE));
  assert.equal(createHash('sha256').update(r.stdout).digest('hex'), documentedHash);
});
