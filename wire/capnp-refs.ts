// Where a struct or a list is in a message (the reader's results), and the byte copy of its deep copy.

/** A struct located in a message: where its data and pointer sections are, and their sizes. */
export class StructRef {
  constructor(
    readonly data: number,
    readonly dataBytes: number,
    readonly ptrs: number,
    readonly ptrCount: number,
  ) {}
}

/** A list located in a message. For composite lists `step` is the element size in bytes. */
export class ListRef {
  constructor(
    readonly start: number,
    readonly count: number,
    readonly elemSize: number,
    readonly step: number,
    readonly dataBytes: number,
    readonly ptrCount: number,
  ) {}
}

/** dst[d..d+n) = src[s..s+n): a loop for the few bytes of a data section, `set` for longer runs. */
export function copyBytes(dst: Uint8Array, d: number, src: Uint8Array, s: number, n: number): void {
  if (n <= 32) {
    for (let i = 0; i < n; i++) dst[d + i] = src[s + i]!;
  } else {
    dst.set(src.subarray(s, s + n), d);
  }
}
