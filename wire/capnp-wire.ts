// A minimal reader and writer of the standard Cap'n Proto wire format (encoding spec:
// https://capnproto.org/encoding.html), for the controller's hot facts and its snapshot.
//
// Why not capnp-es at run time: it costs about 50 µs to encode a 300-byte fact and 3.5 µs per Text
// getter (lists go through a Proxy), which would make the codec the ceiling of the cluster. These
// files write the same bytes with plain DataView arithmetic; facts-codec.ts and snapshot.ts lay
// out each struct by hand from the offsets `capnp compile -ocapnp schema/facts.capnp` prints, and
// their tests check every byte against capnp-es and `capnp decode`.
//
// The writer (capnp-writer.ts) produces one segment (with the standard stream framing). The reader
// (capnp-reader.ts, its texts in capnp-text.ts, StructRef and ListRef in capnp-refs.ts) accepts any
// standard message: several segments, far pointers (single and double), and structs written by an
// older or newer schema (a missing field reads as its default). It is defensive: every pointer is bounds-checked and the total words read
// are limited (capnp-limits.ts), so a corrupt or hostile message throws a WireError instead of
// looping or reading out of range. This file is the one the rest of the tree imports.

export { MESSAGE_BYTES_MAX, NESTING_DEPTH_MAX, TRAVERSAL_FACTOR_MAX, WireError } from './capnp-limits.js';
export { ListRef, Reader, StructRef } from './capnp-reader.js';
export { Writer } from './capnp-writer.js';
export { textBytesHash, textHash, textHashAt } from './text-hash.js';
