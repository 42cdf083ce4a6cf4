// The peer-frame guard (frame-guard.ts) rule by rule, the snapshot assembler's own limit, and the
// guard in place: PeerFrames and the controller core drop a hostile frame (logged once, link
// closed, never fatal) while a broken Raft invariant still fail-stops the core.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CAMPAIGN_TRANSFER, MessageType, newMessage, type Message } from '../../raft/message.js';
import {
  SNAPSHOT_BYTES_MAX,
  SnapshotAssembler,
  SnapshotTooLargeError,
  splitSnapshot,
  type SnapshotChunk,
} from '../../raft/snapshot-chunks.js';
import { RawNode } from '../../raft/rawnode.js';
import { defaultConfig } from '../../raft/config.js';
import { MemoryStorage } from '../../raft/storage.js';
import { SeededRandom } from '../../raft/prng.js';
import { RaftInvariantError } from '../../raft/errors.js';
import { StateType } from '../../raft/raft.js';
import { EntryType, type Entry } from '../../raft/types.js';
import { encodeMessage, encodeSnapshotChunk } from '../raft-codec.js';
import {
  FRAME_INDEX_MAX,
  FRAME_TERM_AHEAD_MAX,
  FRAME_TERM_MAX,
  checkChunk,
  checkFrame,
  checkMessage,
  type FrameRefusal,
  type GuardResult,
  type NodeView,
} from './frame-guard.js';
import { FRAME_REFUSAL_LOG_MS, PeerFrames } from './peer-frames.js';
import type { ClockPort, PeerPort } from './ports.js';
import { ControllerCore } from './core.js';
import { MemoryDisk, MemoryLogStore, MemorySnapshotStore } from './memory-stores.js';
import { nodeClock } from './node-clock.js';
import type { ControllerFatalError } from './errors.js';

// This node is 2, in term 10, following 1; its log ends at 500.
const FOLLOWER: NodeView = { id: 2, term: 10, lead: 1, lastIndex: 500 };
// The same node as the leader of term 10.
const LEADER: NodeView = { id: 2, term: 10, lead: 2, lastIndex: 500 };

function msg(type: MessageType, from: number, term: number, patch: Partial<Message> = {}): Message {
  return { ...newMessage(type, from, 2, term), ...patch };
}

function entries(from: number, terms: number[], type = EntryType.Normal): Entry[] {
  return terms.map((term, i) => ({ term, index: from + i, type, data: new Uint8Array([i]) }));
}

function chunk(patch: Partial<SnapshotChunk> = {}): SnapshotChunk {
  return {
    from: 1,
    to: 2,
    term: 10,
    meta: { index: 900, term: 9, conf: { voters: [1, 2, 3], learners: [] } },
    offset: 0,
    totalBytes: 4,
    data: new Uint8Array(4),
    ...patch,
  };
}

function ok(r: GuardResult, what: string): void {
  assert.ok(r.ok, `${what} passes (refused: ${r.ok ? '' : `${r.reason}: ${r.detail}`})`);
}

function refused(r: GuardResult, reason: FrameRefusal, what: string): void {
  assert.equal(r.ok, false, `${what} is refused`);
  if (r.ok) return;
  assert.equal(r.reason, reason, `${what}: ${r.detail}`);
  assert.ok(r.detail.length > 0, 'the refusal says what was wrong');
}

/** Each frame is refused for `reason`. */
function allRefused(reason: FrameRefusal, cases: ReadonlyArray<readonly [GuardResult, string]>): void {
  for (const [r, what] of cases) refused(r, reason, what);
}

describe('frame guard: legitimate Raft traffic passes', () => {
  it("a leader's appends and heartbeats, in our term, a later one, or a stale one (Raft answers it)", () => {
    ok(
      checkMessage(
        FOLLOWER,
        1,
        msg(MessageType.App, 1, 10, { index: 500, logTerm: 9, commit: 499, entries: entries(501, [9, 10, 10]) }),
      ),
      'an append from our leader',
    );
    ok(
      checkMessage(FOLLOWER, 1, msg(MessageType.Heartbeat, 1, 10, { commit: 1_000_000, context: '1.abcdef-7' })),
      'a heartbeat whose commit is beyond our log (we are behind)',
    );
    ok(
      checkMessage(FOLLOWER, 3, msg(MessageType.App, 3, 11, { index: 5_000_000, logTerm: 11 })),
      'a probe from the new leader of a later term, far beyond our log',
    );
    ok(
      checkMessage(FOLLOWER, 3, msg(MessageType.Heartbeat, 3, 8)),
      "a stale leader's heartbeat (Raft answers with our term)",
    );
    ok(
      checkMessage(FOLLOWER, 3, msg(MessageType.App, 3, 8, { index: 10, logTerm: 8, entries: entries(11, [8]) })),
      "a stale leader's append",
    );
    ok(
      checkMessage({ ...FOLLOWER, lead: 0 }, 3, msg(MessageType.Heartbeat, 3, 10)),
      'the winner of our term when we know no leader yet (we voted for another)',
    );
    ok(
      checkMessage({ id: 4, term: 10, lead: 1, lastIndex: 0 }, 1, {
        ...msg(MessageType.App, 1, 10, { index: 0 }),
        to: 4,
      }),
      'an append to an empty learner',
    );
  });

  it('a follower many terms behind catches up; a new member takes a leader of any term', () => {
    const behind: NodeView = { id: 2, term: 3, lead: 0, lastIndex: 40 };
    ok(checkMessage(behind, 1, msg(MessageType.Heartbeat, 1, 3 + 600)), 'a leader 600 terms ahead (a long partition)');
    ok(
      checkMessage(behind, 1, msg(MessageType.App, 1, 3 + FRAME_TERM_AHEAD_MAX, { index: 40, logTerm: 3 })),
      `a leader exactly ${FRAME_TERM_AHEAD_MAX} terms ahead`,
    );
    ok(
      checkChunk(
        behind,
        1,
        chunk({ term: 900, meta: { index: 10_000, term: 899, conf: { voters: [1, 2, 3], learners: [] } } }),
      ),
      'its snapshot',
    );
    const joining: NodeView = { id: 4, term: 0, lead: 0, lastIndex: 0 };
    ok(
      checkMessage(joining, 1, { ...msg(MessageType.App, 1, 250_000, { index: 7_000_000, logTerm: 249_999 }), to: 4 }),
      'an append of term 250000 to a member joining at term 0',
    );
    ok(checkChunk(joining, 1, chunk({ to: 4, term: 250_000 })), 'and the snapshot it needs');
  });

  it('elections: pre-vote with term + 1, votes, transfers, and their answers', () => {
    ok(
      checkMessage(FOLLOWER, 3, msg(MessageType.PreVote, 3, 11, { index: 500, logTerm: 10 })),
      'a pre-vote for our term + 1',
    );
    ok(
      checkMessage(FOLLOWER, 3, msg(MessageType.PreVote, 3, 7, { index: 20, logTerm: 6 })),
      'a pre-vote from a node behind (Raft refuses it)',
    );
    ok(checkMessage(FOLLOWER, 3, msg(MessageType.Vote, 3, 11, { index: 500, logTerm: 10 })), 'a vote request');
    ok(
      checkMessage(FOLLOWER, 3, msg(MessageType.Vote, 3, 11, { index: 500, logTerm: 10, context: CAMPAIGN_TRANSFER })),
      "a transfer's vote request",
    );
    const candidate: NodeView = { id: 2, term: 10, lead: 0, lastIndex: 500 };
    ok(checkMessage(candidate, 1, msg(MessageType.PreVoteResp, 1, 11)), 'a granted pre-vote (our future term)');
    ok(
      checkMessage(candidate, 1, msg(MessageType.PreVoteResp, 1, 0, { reject: true })),
      'a pre-vote refused by a brand-new node at term 0',
    );
    ok(checkMessage(candidate, 1, msg(MessageType.VoteResp, 1, 10)), 'a granted vote');
    ok(
      checkMessage(candidate, 1, msg(MessageType.VoteResp, 1, 12, { reject: true })),
      'a vote refused by a node ahead of us',
    );
    ok(checkMessage(FOLLOWER, 1, msg(MessageType.TimeoutNow, 1, 10)), 'TimeoutNow from the leader of our term');
    ok(
      checkMessage(FOLLOWER, 3, msg(MessageType.TimeoutNow, 3, 9)),
      'a stale TimeoutNow, sent before our term moved on (Raft ignores it)',
    );
  });

  it('what a leader receives from its followers', () => {
    ok(
      checkMessage(LEADER, 1, msg(MessageType.AppResp, 1, 10, { index: 500 })),
      'an accepted append up to our last index',
    );
    ok(
      checkMessage(
        LEADER,
        1,
        msg(MessageType.AppResp, 1, 10, { index: 400, reject: true, rejectHint: 300, logTerm: 9 }),
      ),
      'a rejection with a hint',
    );
    ok(
      checkMessage(LEADER, 3, msg(MessageType.AppResp, 3, 12)),
      'the answer of a node ahead of us (we are a stale leader)',
    );
    ok(
      checkMessage(LEADER, 1, msg(MessageType.HeartbeatResp, 1, 10, { context: '2.0123abcd-9' })),
      'a heartbeat answer with a read context',
    );
    ok(
      checkMessage(LEADER, 1, msg(MessageType.ReadIndex, 1, 10, { context: '1.0123abcd-3' })),
      "a follower's ReadIndex",
    );
    ok(
      checkMessage(LEADER, 1, msg(MessageType.TransferLeader, 1, 10, { index: 3 })),
      'a forwarded leadership transfer',
    );
    ok(
      checkMessage(FOLLOWER, 1, msg(MessageType.ReadIndexResp, 1, 10, { index: 700, context: '2.0123abcd-1' })),
      "the leader's answer to our ReadIndex",
    );
    ok(
      checkMessage(FOLLOWER, 1, msg(MessageType.ReadIndexResp, 1, 9, { index: 7 })),
      'a stale read answer (Raft ignores it)',
    );
  });

  it("a snapshot's chunks in order, and an empty snapshot", () => {
    const m = msg(MessageType.Snap, 1, 10);
    m.snapshot = {
      meta: { index: 900, term: 9, conf: { voters: [1, 2, 3], learners: [4] } },
      data: new Uint8Array(1000).map((_, i) => i & 0xff),
    };
    const a = new SnapshotAssembler();
    let out;
    for (const c of splitSnapshot(m, 64)) {
      ok(checkFrame(FOLLOWER, 1, { kind: 'chunk', chunk: c }), `the chunk at ${c.offset}`);
      out = a.add(c);
    }
    assert.ok(out !== undefined && typeof out !== 'string');
    assert.deepEqual(out.snapshot, m.snapshot);
    const empty = { ...m, snapshot: { ...m.snapshot, data: new Uint8Array(0) } };
    for (const c of splitSnapshot(empty, 64)) ok(checkChunk(FOLLOWER, 1, c), 'the one chunk of an empty snapshot');
  });
});

describe('frame guard: every rule refuses, naming its reason', () => {
  it('addressing and message types', () => {
    refused(checkMessage(FOLLOWER, 1, msg(MessageType.Beat, 1, 10)), 'local-type', 'a Beat');
    refused(checkMessage(FOLLOWER, 1, msg(MessageType.SnapStatus, 1, 10)), 'local-type', 'a SnapStatus');
    refused(checkMessage(FOLLOWER, 1, msg(MessageType.Hup, 1, 10)), 'local-type', 'a Hup');
    refused(checkMessage(FOLLOWER, 1, msg(MessageType.Snap, 1, 10)), 'bad-snapshot-meta', 'a whole MsgSnap');
    refused(
      checkMessage(FOLLOWER, 1, msg(MessageType.Heartbeat, 3, 10)),
      'sender-mismatch',
      'a message claiming another sender than its link',
    );
    refused(
      checkMessage(FOLLOWER, 2, msg(MessageType.Heartbeat, 2, 11)),
      'sender-is-self',
      'a message from this node itself',
    );
    refused(
      checkMessage(FOLLOWER, 1, { ...msg(MessageType.Heartbeat, 1, 10), to: 3 }),
      'wrong-addressee',
      'a message for another node',
    );
    refused(checkChunk(FOLLOWER, 3, chunk()), 'sender-mismatch', 'a chunk claiming another sender');
    refused(checkChunk(FOLLOWER, 1, chunk({ to: 3 })), 'wrong-addressee', 'a chunk for another node');
  });

  it('numbers: counts, the term and index ceilings, the distance from our term', () => {
    refused(
      checkMessage(FOLLOWER, 1, msg(MessageType.Heartbeat, 1, 2 ** 60)),
      'not-a-count',
      'term 2^60 (not a safe integer)',
    );
    refused(checkMessage(FOLLOWER, 1, msg(MessageType.Heartbeat, 1, -1)), 'not-a-count', 'a negative term');
    refused(
      checkMessage(FOLLOWER, 1, msg(MessageType.App, 1, 10, { index: 1.5 })),
      'not-a-count',
      'a fractional index',
    );
    refused(
      checkMessage(FOLLOWER, 1, msg(MessageType.Heartbeat, 1, 10, { commit: Number.NaN })),
      'not-a-count',
      'a NaN commit',
    );
    refused(
      checkMessage(FOLLOWER, 1, msg(MessageType.Heartbeat, 1, 10 + 1_000_000)),
      'term-too-far-ahead',
      'a heartbeat of our term + 1,000,000',
    );
    refused(
      checkMessage(FOLLOWER, 3, msg(MessageType.PreVote, 3, 10 + FRAME_TERM_AHEAD_MAX + 1)),
      'term-too-far-ahead',
      `a pre-vote ${FRAME_TERM_AHEAD_MAX + 1} terms ahead`,
    );
    refused(
      checkMessage(LEADER, 3, msg(MessageType.AppResp, 3, 10 + FRAME_TERM_AHEAD_MAX + 1)),
      'term-too-far-ahead',
      'a response far ahead',
    );
    refused(checkChunk(FOLLOWER, 1, chunk({ term: 10 + 1_000_000 })), 'term-too-far-ahead', 'a chunk far ahead');
    refused(
      checkMessage({ id: 2, term: 0, lead: 0, lastIndex: 0 }, 1, msg(MessageType.App, 1, FRAME_TERM_MAX + 1)),
      'term-out-of-range',
      'a term above the ceiling, even for a new member',
    );
    refused(
      checkMessage({ id: 2, term: 0, lead: 0, lastIndex: 0 }, 3, msg(MessageType.Vote, 3, FRAME_TERM_AHEAD_MAX + 1)),
      'term-too-far-ahead',
      "a new member takes only a leader's term from far ahead",
    );
    refused(
      checkMessage(FOLLOWER, 1, msg(MessageType.App, 1, 0)),
      'term-zero',
      'an append of term 0 (Raft would take it for a local message)',
    );
    refused(checkMessage(FOLLOWER, 1, msg(MessageType.PreVoteResp, 1, 0)), 'term-zero', 'a granted pre-vote of term 0');
    refused(checkChunk(FOLLOWER, 1, chunk({ term: 0 })), 'term-zero', 'a chunk of term 0');
    refused(
      checkMessage(FOLLOWER, 1, msg(MessageType.Heartbeat, 1, 10, { commit: FRAME_INDEX_MAX + 1 })),
      'index-out-of-range',
      'a commit beyond any plausible log',
    );
    refused(
      checkMessage(
        FOLLOWER,
        1,
        msg(MessageType.App, 1, 10, {
          index: FRAME_INDEX_MAX,
          logTerm: 9,
          entries: entries(FRAME_INDEX_MAX + 1, [10]),
        }),
      ),
      'index-out-of-range',
      'entries beyond any plausible log',
    );
    refused(
      checkMessage(FOLLOWER, 3, msg(MessageType.Vote, 3, 11, { index: 500, logTerm: 12 })),
      'log-term-ahead',
      'a candidate whose last entry is of a later term than its own',
    );
  });

  it('requests and answers that only come from a term we are in', () => {
    refused(
      checkMessage(LEADER, 1, msg(MessageType.ReadIndex, 1, 11)),
      'term-ahead-not-allowed',
      'a ReadIndex of a later term (it would depose us)',
    );
    refused(
      checkMessage(LEADER, 1, msg(MessageType.TransferLeader, 1, 11, { index: 3 })),
      'term-ahead-not-allowed',
      'a TransferLeader of a later term',
    );
    refused(
      checkMessage(FOLLOWER, 1, msg(MessageType.ReadIndexResp, 1, 11, { index: 5 })),
      'term-ahead-not-allowed',
      'a read answer of a later term',
    );
    refused(
      checkMessage(LEADER, 1, msg(MessageType.TransferLeader, 1, 10, { index: 0 })),
      'bad-node-id',
      'a transfer to node 0',
    );
  });

  it('leader-only messages from a node that is not the leader of our term', () => {
    allRefused('not-the-leader', [
      [checkMessage(FOLLOWER, 3, msg(MessageType.Heartbeat, 3, 10)), 'a heartbeat from a second leader of our term'],
      [
        checkMessage(FOLLOWER, 3, msg(MessageType.App, 3, 10, { index: 500, logTerm: 10 })),
        'an append from a second leader',
      ],
      [
        checkMessage(LEADER, 3, msg(MessageType.App, 3, 10, { index: 500, logTerm: 10 })),
        'an append to the leader of the same term',
      ],
      [checkChunk(FOLLOWER, 3, { ...chunk(), from: 3 }), 'a snapshot from a second leader'],
      [
        checkMessage(FOLLOWER, 3, msg(MessageType.ReadIndexResp, 3, 10, { index: 5 })),
        'a read answer from a non-leader',
      ],
    ]);
  });

  it('TimeoutNow only from the leader of our current term', () => {
    allRefused('timeout-now-not-from-leader', [
      [checkMessage(FOLLOWER, 3, msg(MessageType.TimeoutNow, 3, 10)), 'TimeoutNow from a follower'],
      [checkMessage(FOLLOWER, 1, msg(MessageType.TimeoutNow, 1, 11)), 'TimeoutNow of a later term'],
      [
        checkMessage({ ...FOLLOWER, lead: 0 }, 1, msg(MessageType.TimeoutNow, 1, 10)),
        'TimeoutNow when we know no leader',
      ],
      [checkMessage(LEADER, 1, msg(MessageType.TimeoutNow, 1, 10)), 'TimeoutNow to the leader'],
    ]);
  });

  it("a leader's own log positions, entries, contexts", () => {
    refused(
      checkMessage(LEADER, 1, msg(MessageType.AppResp, 1, 10, { index: 501 })),
      'index-beyond-our-log',
      "an accept beyond the leader's last index",
    );
    refused(
      checkMessage(LEADER, 1, msg(MessageType.AppResp, 1, 10, { index: 400, reject: true, rejectHint: 9_999 })),
      'index-beyond-our-log',
      'a reject hint beyond it',
    );
    refused(
      checkMessage(FOLLOWER, 1, msg(MessageType.App, 1, 10, { index: 500, logTerm: 9, entries: entries(502, [10]) })),
      'bad-entries',
      'entries not right after the index',
    );
    refused(
      checkMessage(
        FOLLOWER,
        1,
        msg(MessageType.App, 1, 10, { index: 500, logTerm: 9, entries: entries(501, [10, 11]) }),
      ),
      'bad-entries',
      "an entry of a term above the message's",
    );
    refused(
      checkMessage(
        FOLLOWER,
        1,
        msg(MessageType.App, 1, 10, { index: 500, logTerm: 9, entries: entries(501, [10, 8]) }),
      ),
      'bad-entries',
      'entry terms going down',
    );
    refused(
      checkMessage(
        FOLLOWER,
        1,
        msg(MessageType.App, 1, 10, { index: 500, logTerm: 9, entries: entries(501, [10], 7 as EntryType) }),
      ),
      'bad-entries',
      'an unknown entry type',
    );
    refused(
      checkMessage(FOLLOWER, 1, msg(MessageType.Heartbeat, 1, 10, { entries: entries(501, [10]) })),
      'bad-entries',
      'a heartbeat carrying entries',
    );
    refused(
      checkMessage(FOLLOWER, 1, msg(MessageType.Heartbeat, 1, 10, { context: 'x'.repeat(5_000) })),
      'bad-context',
      'a 5,000-char context',
    );
    refused(
      checkMessage(FOLLOWER, 3, msg(MessageType.PreVote, 3, 11, { context: CAMPAIGN_TRANSFER })),
      'bad-context',
      'a transfer context on a pre-vote',
    );
  });

  it('snapshot chunks: size, bounds, metadata', () => {
    refused(
      checkChunk(FOLLOWER, 1, chunk({ totalBytes: 2 ** 40 })),
      'snapshot-too-large',
      'a chunk announcing 2^40 bytes',
    );
    refused(
      checkChunk(FOLLOWER, 1, chunk({ totalBytes: 2 ** 20 }), { snapshotBytesMax: 2 ** 20 - 1 }),
      'snapshot-too-large',
      'a chunk above a configured maximum',
    );
    refused(
      checkChunk(FOLLOWER, 1, chunk({ totalBytes: 2 ** 60 })),
      'not-a-count',
      'a size that is not a safe integer',
    );
    refused(checkChunk(FOLLOWER, 1, chunk({ offset: -4 })), 'not-a-count', 'a negative offset');
    refused(
      checkChunk(FOLLOWER, 1, chunk({ offset: 2, totalBytes: 4 })),
      'chunk-out-of-bounds',
      'bytes past the announced end',
    );
    refused(
      checkChunk(FOLLOWER, 1, chunk({ data: new Uint8Array(0), totalBytes: 4 })),
      'chunk-out-of-bounds',
      'an empty chunk of a non-empty snapshot',
    );
    refused(
      checkChunk(FOLLOWER, 1, chunk({ meta: { index: 0, term: 9, conf: { voters: [1], learners: [] } } })),
      'bad-snapshot-meta',
      'a snapshot at index 0',
    );
    refused(
      checkChunk(FOLLOWER, 1, chunk({ meta: { index: 900, term: 11, conf: { voters: [1], learners: [] } } })),
      'bad-snapshot-meta',
      "a snapshot of a term above its sender's",
    );
    refused(
      checkChunk(FOLLOWER, 1, chunk({ meta: { index: 900, term: 9, conf: { voters: [], learners: [4] } } })),
      'bad-snapshot-meta',
      'a membership without voters',
    );
    refused(
      checkChunk(FOLLOWER, 1, chunk({ meta: { index: 900, term: 9, conf: { voters: [1, 2], learners: [2] } } })),
      'bad-snapshot-meta',
      'a node both voter and learner',
    );
    refused(
      checkChunk(FOLLOWER, 1, chunk({ meta: { index: 900, term: 9, conf: { voters: [1, 0], learners: [] } } })),
      'bad-snapshot-meta',
      'node id 0',
    );
    refused(
      checkChunk(
        FOLLOWER,
        1,
        chunk({ meta: { index: FRAME_INDEX_MAX + 1, term: 9, conf: { voters: [1], learners: [] } } }),
      ),
      'bad-snapshot-meta',
      'an index beyond any plausible log',
    );
  });
});

describe('SnapshotAssembler limit', () => {
  it('refuses a total above its maximum with a typed error, allocating nothing', () => {
    assert.equal(SNAPSHOT_BYTES_MAX, 4 * 1024 ** 3);
    const a = new SnapshotAssembler();
    assert.throws(
      () => a.add(chunk({ totalBytes: 2 ** 40 })),
      (e: unknown) =>
        e instanceof SnapshotTooLargeError &&
        e.totalBytes === 2 ** 40 &&
        e.maxBytes === SNAPSHOT_BYTES_MAX &&
        e.message.includes(String(2 ** 40)),
    );
    const small = new SnapshotAssembler(100);
    assert.throws(() => small.add(chunk({ totalBytes: 101, data: new Uint8Array(1) })), SnapshotTooLargeError);
    assert.throws(() => small.add(chunk({ totalBytes: -1 })), SnapshotTooLargeError);
    // At the limit it still assembles.
    const out = small.add(chunk({ totalBytes: 100, data: new Uint8Array(100).fill(7) }));
    assert.ok(out !== undefined && typeof out !== 'string' && out.snapshot?.data.byteLength === 100);
  });
});

// ---- the guard in place ----

interface Port extends PeerPort {
  readonly closedInbound: Array<[number, string]>;
  closed: boolean;
}

function fakePort(): Port {
  const p: Port = {
    closedInbound: [],
    closed: false,
    setPeers: () => undefined,
    send: () => true,
    stream: () => Promise.resolve(true),
    connected: () => true,
    closeInbound: (from, reason) => void p.closedInbound.push([from, reason]),
    close: () => {
      p.closed = true;
    },
  };
  return p;
}

interface Line {
  level: string;
  msg: string;
  fields: Record<string, unknown>;
}

function fakeLog(): {
  lines: Line[];
  debug: (m: string, f?: Record<string, unknown>) => void;
  info: (m: string, f?: Record<string, unknown>) => void;
  warn: (m: string, f?: Record<string, unknown>) => void;
  error: (m: string, f?: Record<string, unknown>) => void;
} {
  const lines: Line[] = [];
  const at =
    (level: string) =>
    (msg: string, fields: Record<string, unknown> = {}) =>
      void lines.push({ level, msg, fields });
  return { lines, debug: () => undefined, info: at('info'), warn: at('warn'), error: at('error') };
}

function follower(): RawNode {
  // Node 2 of {1, 2, 3}, following node 1 in term 5.
  const raw = new RawNode(
    defaultConfig(2),
    MemoryStorage.bootstrap({ voters: [1, 2, 3], learners: [] }),
    new SeededRandom(7),
  );
  raw.step(msg(MessageType.Heartbeat, 1, 5, { commit: 1 }));
  raw.advance(raw.ready());
  return raw;
}

describe('PeerFrames with the guard', () => {
  it('drops hostile frames without touching Raft: logged once per peer and reason, counted, link closed', () => {
    const raw = follower();
    assert.equal(raw.raft.lead, 1);
    const port = fakePort();
    const log = fakeLog();
    let now = 0;
    const clock = { now: () => now } as ClockPort;
    const frames = new PeerFrames({ id: 2, raw, peers: port, clock, log, live: () => true, kick: () => undefined });

    const hostile: Array<[number, Uint8Array, FrameRefusal]> = [
      [
        1,
        encodeSnapshotChunk(
          chunk({
            term: 5,
            meta: { index: 90, term: 5, conf: { voters: [1, 2, 3], learners: [] } },
            totalBytes: 2 ** 40,
            data: new Uint8Array(16),
          }),
        ),
        'snapshot-too-large',
      ],
      [3, encodeMessage(msg(MessageType.Heartbeat, 3, 2 ** 60)), 'not-a-count'],
      [3, encodeMessage(msg(MessageType.Heartbeat, 3, 5 + 1_000_000)), 'term-too-far-ahead'],
      [3, encodeMessage(msg(MessageType.TimeoutNow, 3, 5)), 'timeout-now-not-from-leader'],
      [3, new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9]), 'undecodable'],
    ];
    for (const [from, bytes, reason] of hostile) {
      assert.equal(frames.receive(from, bytes), false, reason);
      assert.deepEqual(port.closedInbound.at(-1), [from, reason], `the link of ${reason} is closed`);
    }
    assert.deepEqual([raw.raft.term, raw.raft.lead, raw.raft.state], [5, 1, StateType.Follower], 'Raft never saw them');
    assert.equal(raw.hasReady(), false);
    const warned = log.lines.filter((l) => l.level === 'warn');
    assert.deepEqual(
      warned.map((l) => [l.fields['peer'], l.fields['reason']]),
      hostile.map(([from, , reason]) => [from, reason]),
    );

    // The same peer and reason again: counted and closed, not logged again until FRAME_REFUSAL_LOG_MS.
    for (let i = 0; i < 100; i++) frames.receive(3, encodeMessage(msg(MessageType.TimeoutNow, 3, 5)));
    assert.equal(log.lines.length, warned.length, 'no log flood');
    assert.equal(frames.refused.get('timeout-now-not-from-leader'), 101);
    assert.equal(port.closedInbound.length, hostile.length + 100);
    now += FRAME_REFUSAL_LOG_MS;
    frames.receive(3, encodeMessage(msg(MessageType.TimeoutNow, 3, 5)));
    assert.equal(log.lines.length, warned.length + 1);
    assert.equal(log.lines.at(-1)!.fields['refused_since_last_line'], 101);

    // The leader's traffic still gets through.
    assert.equal(frames.receive(1, encodeMessage(msg(MessageType.Heartbeat, 1, 5, { commit: 1 }))), true);
    assert.equal(
      frames.receive(1, encodeMessage(msg(MessageType.TimeoutNow, 1, 5))),
      true,
      'TimeoutNow from the leader is stepped',
    );
    assert.equal(raw.raft.state, StateType.Candidate);
  });

  it('a broken Raft invariant is not swallowed (the core fail-stops on it)', () => {
    const raw = follower();
    raw.step = () => {
      throw new RaftInvariantError('raft invariant violated: test');
    };
    const frames = new PeerFrames({
      id: 2,
      raw,
      peers: fakePort(),
      clock: nodeClock,
      log: fakeLog(),
      live: () => true,
      kick: () => undefined,
    });
    assert.throws(() => frames.receive(1, encodeMessage(msg(MessageType.Heartbeat, 1, 5))), RaftInvariantError);
  });
});

describe('ControllerCore with hostile peer frames', () => {
  async function openCore(port: Port): Promise<ControllerCore> {
    const disk = new MemoryDisk({ name: 'node 2', onPending: (d) => void setImmediate(() => d.flush()) });
    return ControllerCore.open({
      id: 2,
      log: fakeLog(),
      logStore: MemoryLogStore.open(disk),
      snapshots: MemorySnapshotStore.open(disk),
      peers: port,
      clock: nodeClock,
      seed: 1,
      bootstrapVoters: [1, 2, 3],
      addresses: () => [1, 2, 3].map((id) => ({ id, address: `127.0.0.1:${id}` })),
      dataDir: 'memory:node-2',
    });
  }

  it('survives a 2^40-byte snapshot chunk, a term of 2^60 or +1,000,000 and a TimeoutNow from a follower; fail-stops on a Raft invariant', async () => {
    const port = fakePort();
    const core = await openCore(port);
    const fatal: ControllerFatalError[] = [];
    core.onFatal((e) => fatal.push(e));
    try {
      core.receive(1, encodeMessage(msg(MessageType.Heartbeat, 1, 5, { commit: 1 })));
      const term = core.status().term;
      assert.equal(core.leaderId(), 1);
      core.receive(
        1,
        encodeSnapshotChunk(
          chunk({
            term,
            meta: { index: 90, term, conf: { voters: [1, 2, 3], learners: [] } },
            totalBytes: 2 ** 40,
            data: new Uint8Array(16),
          }),
        ),
      );
      core.receive(3, encodeMessage(msg(MessageType.Heartbeat, 3, 2 ** 60)));
      core.receive(3, encodeMessage(msg(MessageType.Heartbeat, 3, term + 1_000_000)));
      core.receive(3, encodeMessage(msg(MessageType.TimeoutNow, 3, term)));
      await new Promise((r) => setTimeout(r, 20));
      assert.equal(core.fatalError, null, `no fail-stop: ${core.fatalError?.message}`);
      assert.deepEqual([core.status().term, core.leaderId(), core.status().state], [term, 1, StateType.Follower]);
      assert.deepEqual(
        port.closedInbound.map(([, r]) => r),
        ['snapshot-too-large', 'not-a-count', 'term-too-far-ahead', 'timeout-now-not-from-leader'],
      );

      // A broken invariant inside Raft while stepping a (valid) frame stops the core for good.
      const step = RawNode.prototype.step;
      RawNode.prototype.step = () => {
        throw new RaftInvariantError('raft invariant violated: injected by the test');
      };
      try {
        core.receive(1, encodeMessage(msg(MessageType.Heartbeat, 1, term, { commit: 1 })));
      } finally {
        RawNode.prototype.step = step;
      }
      assert.equal(fatal.length, 1, 'onFatal is called (xcectld exits non-zero on it)');
      assert.equal(fatal[0]!.kind, 'raft-invariant');
      assert.ok(core.fatalError !== null && port.closed, 'the core fail-stopped and closed its links');
    } finally {
      await core.stop();
    }
  });
});
