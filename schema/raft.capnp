# The Raft peer protocol (`/raft`): one Message per binary WebSocket frame.
# Mirrors raft/message.ts; a MsgSnap travels as a series of messages of type Snap, each carrying one
# chunk of the snapshot (snapOffset / snapTotal / snapData) and the snapshot's metadata.
# Evolution is additive: new fields only, never renumbered.
@0xb4f1d7a0c2e3f915;

struct Entry {
  term @0 :UInt64;
  index @1 :UInt64;
  type @2 :UInt8;
  data @3 :Data;
}

struct ConfState {
  voters @0 :List(UInt32);
  learners @1 :List(UInt32);
}

struct SnapshotMeta {
  index @0 :UInt64;
  term @1 :UInt64;
  conf @2 :ConfState;
}

struct Message {
  type @0 :UInt8;
  from @1 :UInt32;
  to @2 :UInt32;
  term @3 :UInt64;
  logTerm @4 :UInt64;
  index @5 :UInt64;
  entries @6 :List(Entry);
  commit @7 :UInt64;
  reject @8 :Bool;
  rejectHint @9 :UInt64;
  context @10 :Text;
  snapMeta @11 :SnapshotMeta;
  snapOffset @12 :UInt64;
  snapTotal @13 :UInt64;
  snapData @14 :Data;
}
