import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lookupUser, parsePasswdLine, resolveExecIdentity } from './identity.js';

test('a passwd line gives name, uid, gid and home', () => {
  assert.deepEqual(parsePasswdLine('alice:x:1000:100:Alice A:/home/alice:/bin/bash'), {
    name: 'alice',
    uid: 1000,
    gid: 100,
    home: '/home/alice',
  });
  assert.equal(parsePasswdLine('broken:x:abc:1::/:'), null);
  assert.equal(parsePasswdLine('# comment'), null);
});

test('without getent the worker reads the passwd file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xce-passwd-'));
  try {
    const file = join(dir, 'passwd');
    writeFileSync(file, 'root:x:0:0:root:/root:/bin/sh\nalice:x:1000:100::/home/alice:/bin/bash\n');
    assert.deepEqual(await lookupUser('alice', { getent: null, passwdFile: file }), {
      name: 'alice',
      uid: 1000,
      gid: 100,
      home: '/home/alice',
    });
    assert.equal(await lookupUser('bob', { getent: null, passwdFile: file }), null);
    // getent configured but not installed: the file is the fallback.
    assert.equal((await lookupUser('alice', { getent: '/nonexistent/getent', passwdFile: file }))?.uid, 1000);
    await assert.rejects(
      resolveExecIdentity('bob', 'node07', true, { getent: null, passwdFile: file }),
      /^LaunchError: execution user bob does not exist on host node07$/,
    );
    assert.equal(
      (await resolveExecIdentity('alice', 'node07', true, { getent: null, passwdFile: file })).switchUser,
      true,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a name that cannot be a user name is never looked up', async () => {
  assert.equal(await lookupUser('../etc', { getent: null, passwdFile: '/nonexistent' }), null);
  assert.equal(await lookupUser('-rf', { getent: null, passwdFile: '/nonexistent' }), null);
});
