// The worker's recent-run keys (executor.ts) as the bytes of a JSON array, kept up to date as keys
// are added at the end and dropped from the start, for the state file (state-file.ts): a save
// takes them as they are instead of stringifying up to RECENT_RUNS_MAX keys each time (one save
// per event-loop turn with a change while jobs run; with a full list, ~0.5-1 ms of CPU each).

/** Chunks kept before they are merged into one (a save adds at most one). */
const CHUNKS_MAX = 64;
const EMPTY = Buffer.from('[]');
const OPEN = Buffer.from('[');
const CLOSE = Buffer.from(']');

export class RecentJson {
  /** Encoded items, each `"key",` (the last comma is not written); the first `gone` bytes are dropped keys. */
  private chunks: Buffer[] = [];
  /** Items added since the last `bytes()`, not yet encoded. */
  private pending = '';
  private gone = 0;

  /** `key` was added at the end of the list. */
  added(key: string): void {
    this.pending += `${JSON.stringify(key)},`;
  }

  /** `key`, the first of the list, was dropped. */
  dropped(key: string): void {
    this.gone += Buffer.byteLength(JSON.stringify(key)) + 1;
  }

  /** The list is now `keys` (a key moved from inside it). */
  reset(keys: Iterable<string>): void {
    this.chunks = [];
    this.pending = '';
    this.gone = 0;
    for (const k of keys) this.added(k);
  }

  /** The JSON array's bytes, in pieces (not to be modified): `JSON.stringify` of the list. */
  bytes(): Buffer[] {
    if (this.pending !== '') this.chunks.push(Buffer.from(this.pending));
    this.pending = '';
    while (this.gone > 0 && this.chunks.length > 0) {
      const first = this.chunks[0] as Buffer;
      if (first.length > this.gone) {
        this.chunks[0] = first.subarray(this.gone);
        this.gone = 0;
      } else {
        this.gone -= first.length;
        this.chunks.shift();
      }
    }
    if (this.chunks.length === 0) return [EMPTY];
    if (this.chunks.length > CHUNKS_MAX) this.chunks = [Buffer.concat(this.chunks)];
    const last = this.chunks.length - 1;
    const items = this.chunks.map((c, i) => (i === last ? c.subarray(0, c.length - 1) : c)); // no comma after the last
    return [OPEN, ...items, CLOSE];
  }
}
