import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  deriveClusterKeys,
  formatHostCredential,
  hostCredentialKey,
  hostCredentialKeyCached,
  HOST_KEYS_CACHED_MAX,
  KeyError,
  parseHostCredential,
  TLS_TICKET_KEYS_BYTES,
  tlsTicketKeys,
} from './keys.js';

const root = new TextEncoder().encode('0123456789abcdef0123456789abcdef-root');

test('each purpose gets its own key, the same on every controller, none equal to the root secret', () => {
  const a = deriveClusterKeys(root);
  const b = deriveClusterKeys(new Uint8Array(root));
  assert.deepEqual(a, b, 'deterministic');
  const hex = [a.userToken, a.peer, a.workerRoot, root].map((k) => Buffer.from(k).toString('hex'));
  assert.equal(new Set(hex).size, 4, 'user-token key, peer key, worker root and root secret all differ');
});

test("a host's credential depends on its name and enrolment epoch", () => {
  const { workerRoot } = deriveClusterKeys(root);
  const k = (h: string, e: number) => Buffer.from(hostCredentialKey(workerRoot, h, e)).toString('hex');
  assert.equal(k('node01', 0), k('node01', 0));
  assert.notEqual(k('node01', 0), k('node02', 0));
  assert.notEqual(k('node01', 0), k('node01', 1));
  assert.throws(() => hostCredentialKey(workerRoot, 'node01', -1), KeyError);
});

test('the cached host credential is the derived one, per worker root, host and epoch, and stays bounded', () => {
  const a = deriveClusterKeys(root).workerRoot;
  const b = deriveClusterKeys(new TextEncoder().encode('another-root-secret-of-32-bytes-or-more')).workerRoot;
  const hex = (k: Uint8Array) => Buffer.from(k).toString('hex');
  for (const [w, h, e] of [
    [a, 'node01', 0],
    [a, 'node01', 1],
    [a, 'node02', 0],
    [b, 'node01', 0],
  ] as const) {
    assert.equal(hex(hostCredentialKeyCached(w, h, e)), hex(hostCredentialKey(w, h, e)), `${h} epoch ${e}`);
    assert.equal(hex(hostCredentialKeyCached(w, h, e)), hex(hostCredentialKey(w, h, e)), `${h} epoch ${e}, cached`);
  }
  assert.notEqual(hex(hostCredentialKeyCached(a, 'node01', 0)), hex(hostCredentialKeyCached(b, 'node01', 0)));
  assert.throws(() => hostCredentialKeyCached(a, 'node01', -1), KeyError);
  for (let i = 0; i <= HOST_KEYS_CACHED_MAX; i++) hostCredentialKeyCached(a, `h${i}`, 0);
  assert.equal(hex(hostCredentialKeyCached(a, 'h0', 0)), hex(hostCredentialKey(a, 'h0', 0)), 'evicted, derived again');
});

test('a short root secret is refused, naming its length', () => {
  assert.throws(() => deriveClusterKeys(new Uint8Array(31)), /at least 32 bytes \(it is 31\)/);
});

test('a credential file round-trips and a bad one is refused naming the file and what is wrong', () => {
  const c = { host: 'node01', epoch: 2, key: hostCredentialKey(deriveClusterKeys(root).workerRoot, 'node01', 2) };
  const text = formatHostCredential(c);
  assert.match(text, /^xce-host-credential\/v1 node01 2 [A-Za-z0-9_-]{43}\n$/);
  assert.deepEqual(parseHostCredential(text, 'f'), c);
  assert.throws(
    () => parseHostCredential('the cluster secret', '/etc/xce/h.cred'),
    /\/etc\/xce\/h\.cred: not a host credential/,
  );
  assert.throws(
    () => parseHostCredential('xce-host-credential/v1 node01 x AAAA', 'f'),
    /f: epoch x is not a whole number/,
  );
  assert.throws(() => parseHostCredential('xce-host-credential/v1 node01 0 AAAA', 'f'), /the key is 3 bytes/);
});

test("the TLS ticket keys: Node's 48 bytes, the same on every controller, new each period, apart from every other key", () => {
  const a = deriveClusterKeys(root);
  const other = deriveClusterKeys(new TextEncoder().encode('another-root-secret-of-32-bytes-or-more')).tlsTicketRoot;
  const hex = (k: Uint8Array) => Buffer.from(k).toString('hex');
  assert.equal(tlsTicketKeys(a.tlsTicketRoot, 7).length, TLS_TICKET_KEYS_BYTES);
  assert.equal(hex(tlsTicketKeys(a.tlsTicketRoot, 7)), hex(tlsTicketKeys(deriveClusterKeys(root).tlsTicketRoot, 7)));
  const all = [
    tlsTicketKeys(a.tlsTicketRoot, 7),
    tlsTicketKeys(a.tlsTicketRoot, 8),
    tlsTicketKeys(other, 7),
    a.tlsTicketRoot,
    a.userToken,
    a.peer,
    a.workerRoot,
  ].map(hex);
  assert.equal(new Set(all).size, all.length, 'periods, clusters and purposes all differ');
  assert.throws(() => tlsTicketKeys(a.tlsTicketRoot, -1), KeyError);
  assert.throws(() => tlsTicketKeys(a.tlsTicketRoot, 1.5), KeyError);
});
