// The bounds every Cap'n Proto message here is held to (size, traversal, nesting), and WireError,
// the error a message that breaks them, or is not of the expected shape, is reported with. Shared
// by the writer (capnp-writer.ts), the reader (capnp-reader.ts) and its texts (capnp-text.ts).

/** Largest message the writer produces or the reader accepts (one segment of the stream format). */
export const MESSAGE_BYTES_MAX = 2 ** 31;
/** Reading may visit at most this many times the message's words (the amplification limit). */
export const TRAVERSAL_FACTOR_MAX = 8;
/** Deepest nesting of structs and lists accepted (recursive select expressions). */
export const NESTING_DEPTH_MAX = 64;

/** The bytes are not a valid Cap'n Proto message of the expected shape. */
export class WireError extends Error {
  override readonly name = 'WireError';
  constructor(
    message: string,
    readonly offsetBytes: number,
  ) {
    super(`${message} (at byte ${offsetBytes})`);
  }
}
