// Segment files: `<seq:16 hex>-<firstIndex:16 hex>.wal`. The sequence number orders the files and
// must have no gap; the first index (the next entry index when the segment was created) makes a
// listing readable and, because the log only grows between truncations, sorts with the sequence.
// A segment begins with a SegmentHeader record; records are never split across two files: a record
// that would take a segment past its size goes to a new segment (unless the segment holds nothing
// but its header, so a record larger than the segment size still finds a home).

import {
  close,
  constants,
  fdatasync,
  fdatasyncSync,
  ftruncate,
  open,
  promises as fsp,
  write,
  writeSync,
} from 'node:fs';
import { WRITE_INLINE_BYTES_MAX } from './limits.js';
import { join } from 'node:path';
import {
  type FrameProblem,
  type Op,
  type RawRecord,
  type SegmentHeader,
  RecordType,
  anyValidRecordAfter,
  decodeBatch,
  decodeSegmentHeader,
  encodeSegmentHeader,
  isFrameProblem,
  readFrame,
} from './record.js';

const NAME_RE = /^([0-9a-f]{16})-([0-9a-f]{16})\.wal$/;

export function segmentName(seq: number, firstIndex: number): string {
  return `${seq.toString(16).padStart(16, '0')}-${firstIndex.toString(16).padStart(16, '0')}.wal`;
}

export interface SegmentFileName {
  readonly name: string;
  readonly seq: number;
  readonly firstIndex: number;
}

export function parseSegmentName(name: string): SegmentFileName | undefined {
  const m = NAME_RE.exec(name);
  if (!m) return undefined;
  return { name, seq: parseInt(m[1]!, 16), firstIndex: parseInt(m[2]!, 16) };
}

/** The segment files of `dir`, by sequence number. Other files are not the WAL's and are ignored. */
export async function listSegments(dir: string): Promise<SegmentFileName[]> {
  const names = await fsp.readdir(dir);
  const out: SegmentFileName[] = [];
  for (const n of names) {
    const p = parseSegmentName(n);
    if (p) out.push(p);
  }
  return out.sort((a, b) => a.seq - b.seq);
}

/** One batch record as read back: its ops and where it ends. */
export interface ScannedBatch {
  readonly offset: number;
  readonly ops: Op[];
}

/** What reading a segment file found. */
export interface SegmentScan {
  /** The header, or undefined when the file does not even hold a whole valid header. */
  readonly header: SegmentHeader | undefined;
  readonly batches: ScannedBatch[];
  /** Bytes from the start that hold whole valid records. */
  readonly validBytes: number;
  /** The file's size: past validBytes, without a `problem`, only zeros (preallocated, never written). */
  readonly fileBytes: number;
  /** The first bad bytes, if any: where, what was expected, and whether anything valid follows. */
  readonly problem?: FrameProblem & {
    readonly offset: number;
    readonly validRecordAfter: number | undefined;
    /**
     * True when the record's frame and CRC were whole and its content is what is wrong: such a
     * record was written in full, so it can never be a torn tail.
     */
    readonly framed: boolean;
  };
}

/**
 * Reads and checks every record of a segment (every CRC, every field). It does not decide whether a
 * problem is a torn tail or corruption: that depends on whether this is the last segment.
 */
export function scanSegment(buf: Uint8Array): SegmentScan {
  const end = buf.length;
  const batches: ScannedBatch[] = [];
  let header: SegmentHeader | undefined;
  let off = 0;
  const fail = (p: FrameProblem, framed = true): SegmentScan => ({
    header,
    batches,
    validBytes: off,
    fileBytes: end,
    problem: { ...p, offset: off, validRecordAfter: anyValidRecordAfter(buf, off, end), framed },
  });
  while (off < end) {
    const fr: RawRecord | FrameProblem = readFrame(buf, off, end);
    // Zeros from here to the end of the file, after the header: preallocated space (zeroAhead) that
    // no record reached. The records end here; a torn record would have left non-zero bytes.
    if (isFrameProblem(fr) && header !== undefined && allZero(buf, off, end)) break;
    if (isFrameProblem(fr)) return fail(fr, false);
    if (off === 0) {
      const h = decodeSegmentHeader(buf, fr);
      if ('expected' in h) return fail(h);
      header = h;
    } else {
      if (fr.type !== RecordType.Batch) return fail({ expected: 'a batch record', found: `record type ${fr.type}` });
      const ops = decodeBatch(buf, fr);
      if ('expected' in ops) return fail(ops);
      batches.push({ offset: off, ops });
    }
    off = fr.end;
  }
  if (!header) return fail({ expected: 'a segment header record', found: 'an empty file' }, false);
  return { header, batches, validBytes: off, fileBytes: end };
}

// The hot path uses the callback API on a raw fd: FileHandle promises cost a measurable share of
// one small write+fdatasync (see benchmarks/README.md, WAL section).
const fdOpen = (path: string, flags: number, mode?: number): Promise<number> =>
  new Promise((res, rej) => open(path, flags, mode, (e, fd) => (e ? rej(e) : res(fd))));
const fdWrite = (fd: number, buf: Uint8Array, off: number, len: number, pos: number): Promise<number> =>
  new Promise((res, rej) => write(fd, buf, off, len, pos, (e, n) => (e ? rej(e) : res(n))));
const fdSync = (fd: number): Promise<void> => new Promise((res, rej) => fdatasync(fd, (e) => (e ? rej(e) : res())));
const fdTruncate = (fd: number, len: number): Promise<void> =>
  new Promise((res, rej) => ftruncate(fd, len, (e) => (e ? rej(e) : res())));
const fdClose = (fd: number): Promise<void> => new Promise((res, rej) => close(fd, (e) => (e ? rej(e) : res())));

/** Zeros written per call by SegmentWriter.zeroAhead (one buffer, reused): the daemon's 1 MiB in one write. */
const ZERO_WRITE_BYTES = 1024 * 1024;
let zeros: Uint8Array | undefined;

/** An open segment being appended to. Every write is followed by fdatasync before it resolves. */
export class SegmentWriter {
  private closed = false;
  /** The file's bytes that are records or written zeros (≥ size once zeroAhead ran). */
  private zeroedTo = 0;
  private constructor(
    readonly path: string,
    readonly seq: number,
    readonly firstIndex: number,
    private readonly fd: number,
    private size: number,
  ) {}

  /** Bytes in the file (all of them durable once the last `append` resolved). */
  get bytes(): number {
    return this.size;
  }

  /**
   * Creates a new segment file (O_EXCL: never over an existing one), writes its header and syncs it.
   * The caller fsyncs the directory to make the new name durable.
   */
  static async create(dir: string, header: SegmentHeader): Promise<SegmentWriter> {
    const path = join(dir, segmentName(header.seq, header.firstIndex));
    const fd = await fdOpen(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600); // job environments: owner only
    try {
      const h = encodeSegmentHeader(header);
      await writeAll(fd, h, 0);
      await fdSync(fd);
      return new SegmentWriter(path, header.seq, header.firstIndex, fd, h.length);
    } catch (e) {
      await fdClose(fd).catch(() => undefined);
      throw e;
    }
  }

  /** Opens an existing segment for appending at `validBytes`, cutting (and syncing) anything beyond. */
  static async reopen(
    path: string,
    seq: number,
    firstIndex: number,
    validBytes: number,
    fileBytes: number,
  ): Promise<SegmentWriter> {
    const fd = await fdOpen(path, constants.O_WRONLY);
    try {
      if (fileBytes !== validBytes) {
        await fdTruncate(fd, validBytes);
        await fdSync(fd);
      }
      return new SegmentWriter(path, seq, firstIndex, fd, validBytes);
    } catch (e) {
      await fdClose(fd).catch(() => undefined);
      throw e;
    }
  }

  /**
   * Preallocation: before a record of `need` bytes goes past the zeros written after the last
   * record, writes zeros up to `ahead` bytes past that record (not past `limit`, the segment size,
   * unless the record itself goes past it). The record's own fdatasync makes them durable with it;
   * the records after it overwrite allocated blocks inside the file's size, whose fdatasync flushes
   * the data alone (ext4 writes the inode too when the size grows). A crash leaves an all-zero tail,
   * which scanSegment reads as the end of the records.
   */
  async zeroAhead(need: number, ahead: number, limit: number): Promise<void> {
    const from = Math.max(this.zeroedTo, this.size);
    if (this.size + need <= from) return;
    const to = Math.max(this.size + need, Math.min(this.size + need + ahead, limit));
    zeros ??= new Uint8Array(ZERO_WRITE_BYTES);
    for (let at = from; at < to; at += ZERO_WRITE_BYTES)
      await writeAll(this.fd, zeros.subarray(0, Math.min(ZERO_WRITE_BYTES, to - at)), at);
    this.zeroedTo = to;
  }

  /**
   * Appends one record and makes it durable. A small record is copied into the page cache with a
   * synchronous write (microseconds, and one thread-pool round trip fewer per fdatasync); a large
   * one is written from the thread pool so the event loop never stalls on it. The fdatasync runs in
   * the thread pool too, unless `syncOnEventLoop`: then it blocks the event loop for the disk's
   * flush latency, and saves the two thread hand-offs per record (see WalOptions.syncOnEventLoop).
   */
  async append(rec: Uint8Array, syncOnEventLoop = false): Promise<void> {
    if (rec.length <= WRITE_INLINE_BYTES_MAX) writeAllSync(this.fd, rec, this.size);
    else await writeAll(this.fd, rec, this.size);
    this.size += rec.length;
    if (syncOnEventLoop) fdatasyncSync(this.fd);
    else await fdSync(this.fd);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await fdClose(this.fd);
  }
}

function allZero(buf: Uint8Array, from: number, end: number): boolean {
  for (let k = from; k < end; k++) if (buf[k] !== 0) return false;
  return true;
}

function writeAllSync(fd: number, buf: Uint8Array, position: number): void {
  let done = 0;
  while (done < buf.length) {
    const n = writeSync(fd, buf, done, buf.length - done, position + done);
    if (n <= 0) throw new Error(`short write at ${position + done}`);
    done += n;
  }
}

async function writeAll(fd: number, buf: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const n = await fdWrite(fd, buf, done, buf.length - done, position + done);
    if (n <= 0) throw new Error(`short write at ${position + done}`);
    done += n;
  }
}
