import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MessageType, newMessage } from './message.js';
import { SnapshotAssembler, splitSnapshot } from './snapshot-chunks.js';

function snapMsg(bytes: number) {
  const m = newMessage(MessageType.Snap, 1, 2, 5);
  const data = new Uint8Array(bytes).map((_, i) => i & 0xff);
  m.snapshot = { meta: { index: 40, term: 4, conf: { voters: [1, 2, 3], learners: [] } }, data };
  return m;
}

describe('InstallSnapshot in chunks', () => {
  it('splits and reassembles a snapshot byte for byte', () => {
    const m = snapMsg(1000);
    const chunks = splitSnapshot(m, 64);
    assert.equal(chunks.length, 16);
    const a = new SnapshotAssembler();
    let out;
    for (const c of chunks) out = a.add(c);
    assert.ok(out !== undefined && typeof out !== 'string');
    assert.deepEqual(out.snapshot, m.snapshot);
    assert.equal(out.term, 5);
    assert.equal(out.type, MessageType.Snap);
  });

  it('an empty snapshot is one chunk', () => {
    const chunks = splitSnapshot(snapMsg(0), 64);
    assert.equal(chunks.length, 1);
    const out = new SnapshotAssembler().add(chunks[0]!);
    assert.ok(out !== undefined && typeof out !== 'string');
  });

  it('a lost chunk abandons the transfer; a restart from offset 0 succeeds', () => {
    const chunks = splitSnapshot(snapMsg(300), 100);
    const a = new SnapshotAssembler();
    assert.equal(a.add(chunks[0]!), undefined);
    assert.equal(a.add(chunks[2]!), 'out-of-order');
    assert.equal(a.add(chunks[1]!), 'out-of-order', 'the transfer was dropped');
    for (const c of chunks.slice(0, 2)) assert.equal(a.add(c), undefined);
    const out = a.add(chunks[2]!);
    assert.ok(out !== undefined && typeof out !== 'string');
  });
});
