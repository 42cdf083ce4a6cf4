// Start-up: read and check every segment (sequence, headers, CRCs, the log's rules), cut a torn
// tail of the last segment and refuse any other damage, reopen (or create) the segment to append
// to; and the daemon's check that the log continues its latest snapshot (entriesAfterSnapshot).
import { promises as fsp } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Entry, HardState } from '../raft/types.js';
import { WalCorruptionError, WalGapError, WalMissingSegmentError, WalVersionError } from './errors.js';
import { fsyncDir } from './fsync.js';
import type { SegmentMeta } from './group-commit.js';
import { LogImage } from './log-image.js';
import { type SegmentHeader, type SnapshotBase, OpKind } from './record.js';
import type { WalLogger } from './options.js';
import {
  type SegmentFileName,
  type SegmentScan,
  SegmentWriter,
  listSegments,
  scanSegment,
  segmentName,
} from './segment.js';

/** What start-up read back. Entries are contiguous: entries[k].index === firstIndex + k. */
export interface RecoveredLog {
  readonly hardState: HardState;
  /** The latest snapshot mark (index 0, term 0 when none): entries ≤ its index are not in the log. */
  readonly snapshot: SnapshotBase;
  readonly entries: Entry[];
  /** Index of entries[0]; lastIndex + 1 when there is no entry. */
  readonly firstIndex: number;
  readonly lastIndex: number;
  /** Present when a torn tail was cut at start-up. */
  readonly tornTail?: { readonly file: string; readonly offset: number; readonly bytesCut: number };
}

/** What the writer continues from: the segments, the one to append to, the log they hold. */
export interface RecoveredFiles {
  readonly segments: SegmentMeta[];
  readonly active: SegmentWriter;
  readonly image: LogImage;
  readonly recovered: RecoveredLog;
}

type Tail = { file: SegmentFileName; validBytes: number; fileBytes: number };

/**
 * The start-up check the daemon makes once it knows its latest durable snapshot: the log must
 * continue it, so every entry after the snapshot is either in the log or was never written. Returns
 * the entries after the snapshot (those at or below it are covered by it).
 */
export function entriesAfterSnapshot(
  dir: string,
  recovered: RecoveredLog,
  snapshotIndex: number,
  dataDir = resolve(dir, '..'),
): Entry[] {
  return logAfterSnapshot(recovered.entries, recovered.firstIndex, snapshotIndex, resolve(dir), dataDir);
}

/**
 * The entries after `snapshotIndex` of a recovered log whose first entry is at `firstIndex` (its
 * last index + 1 when it holds none), or WalGapError when the log starts past the entry right after
 * the snapshot. An empty log counts too: its first index says which entries it once held (segment
 * headers and snapshot marks carry it), so a log whose every entry went with a lost segment is a gap,
 * not a log with nothing to replay. Shared with the in-memory log store, which keeps the same rules.
 */
export function logAfterSnapshot(
  entries: readonly Entry[],
  firstIndex: number,
  snapshotIndex: number,
  dir: string,
  dataDir: string,
): Entry[] {
  if (firstIndex > snapshotIndex + 1) throw new WalGapError(dir, firstIndex, snapshotIndex, dataDir);
  return entries.slice(Math.max(0, snapshotIndex + 1 - firstIndex));
}

export async function recover(dir: string, logger: WalLogger, dataDir: string): Promise<RecoveredFiles> {
  const files = await listSegments(dir);
  checkSequence(dir, files, dataDir);
  let image: LogImage | undefined;
  const segments: SegmentMeta[] = [];
  let tail: Tail | undefined;
  let tornTail: RecoveredLog['tornTail'];
  for (let k = 0; k < files.length; k++) {
    const f = files[k]!;
    const path = join(dir, f.name);
    const isLast = k === files.length - 1;
    const buf = await fsp.readFile(path);
    const scan = scanSegment(buf);
    if (scan.problem) tornTail = checkProblem(scan, path, isLast, logger, dataDir);
    const h = scan.header;
    if (!h) {
      // The last segment's own header was torn: it was created but never held an acknowledged record.
      await fsp.unlink(path);
      await fsyncDir(dir);
      logger.warn(`removed ${path}: its header was never completely written`);
      continue;
    }
    image = continueImage(image, h, f, path, dataDir);
    segments.push(replaySegment(image, scan, f, path, dataDir));
    tail = { file: f, validBytes: scan.validBytes, fileBytes: scan.fileBytes };
  }
  let active: SegmentWriter;
  if (!image || !tail) {
    const seq = files.length > 0 ? files[files.length - 1]!.seq : 0;
    image = LogImage.empty(true);
    active = await SegmentWriter.create(dir, { seq, firstIndex: 1, hardState: image.hardState, base: image.base });
    await fsyncDir(dir);
    segments.push({ seq, firstIndex: 1, path: active.path, maxIndex: 0 });
  } else {
    active = await SegmentWriter.reopen(
      join(dir, tail.file.name),
      tail.file.seq,
      tail.file.firstIndex,
      tail.validBytes,
      tail.fileBytes,
    );
  }
  const recovered: RecoveredLog = {
    hardState: image.hardState,
    snapshot: image.base,
    entries: image.entries!,
    firstIndex: image.firstIndex,
    lastIndex: image.lastIndex,
    ...(tornTail ? { tornTail } : {}),
  };
  return { segments, active, image, recovered };
}

/** Segment sequence numbers must follow each other: a gap is a lost segment. */
function checkSequence(dir: string, files: readonly SegmentFileName[], dataDir: string): void {
  for (let k = 1; k < files.length; k++) {
    if (files[k]!.seq !== files[k - 1]!.seq + 1) {
      throw new WalMissingSegmentError(
        dir,
        `a segment with sequence number ${files[k - 1]!.seq + 1} (${segmentName(files[k - 1]!.seq + 1, 0).slice(0, 16)}-*.wal)`,
        files[k]!.name,
        dataDir,
      );
    }
  }
}

/** A damaged segment: a torn tail of the last one is cut (returned, and logged); anything else throws. */
function checkProblem(
  scan: SegmentScan,
  path: string,
  isLast: boolean,
  logger: WalLogger,
  dataDir: string,
): NonNullable<RecoveredLog['tornTail']> {
  const p = scan.problem!;
  if (p.framed && /^WAL format version/.test(p.expected)) {
    throw new WalVersionError(path, p.expected, p.found);
  }
  if (!isLast || p.validRecordAfter !== undefined || p.framed) {
    const after = p.framed
      ? '; the record is whole (its CRC matches), so this is not a torn tail'
      : p.validRecordAfter !== undefined
        ? `; a valid record follows at offset ${p.validRecordAfter}, so this is not a torn tail`
        : '; this is not the last segment, so this is not a torn tail';
    throw new WalCorruptionError(path, p.offset, p.expected, p.found + after, dataDir);
  }
  const tornTail = { file: path, offset: p.offset, bytesCut: scan.fileBytes - scan.validBytes };
  logger.warn(
    `cut a torn tail (a write the crash left unfinished, never acknowledged) from ${path} at offset ${p.offset}: ${scan.fileBytes - scan.validBytes} byte(s); expected ${p.expected}, found ${p.found}`,
    tornTail,
  );
  return tornTail;
}

/** The first segment's header starts the log; each later one must continue the log read so far. */
function continueImage(
  image: LogImage | undefined,
  h: SegmentHeader,
  f: SegmentFileName,
  path: string,
  dataDir: string,
): LogImage {
  if (h.seq !== f.seq || h.firstIndex !== f.firstIndex) {
    throw new WalCorruptionError(
      path,
      0,
      `a header for sequence ${f.seq}, first index ${f.firstIndex} (the file name)`,
      `sequence ${h.seq}, first index ${h.firstIndex}`,
      dataDir,
    );
  }
  if (!image) {
    image = new LogImage(h, true);
  } else {
    const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
    if (h.firstIndex !== image.lastIndex + 1 || !same(h.hardState, image.hardState) || !same(h.base, image.base)) {
      throw new WalCorruptionError(
        path,
        0,
        `a header continuing the previous segment (first index ${image.lastIndex + 1}, hard state ${JSON.stringify(image.hardState)}, snapshot ${JSON.stringify(image.base)})`,
        `first index ${h.firstIndex}, hard state ${JSON.stringify(h.hardState)}, snapshot ${JSON.stringify(h.base)}`,
        dataDir,
      );
    }
  }
  return image;
}

/** Replays one segment's records into the log; returns the segment as the WAL tracks it. */
function replaySegment(
  image: LogImage,
  scan: SegmentScan,
  f: SegmentFileName,
  path: string,
  dataDir: string,
): SegmentMeta {
  const meta: SegmentMeta = { seq: f.seq, firstIndex: f.firstIndex, path, maxIndex: f.firstIndex - 1 };
  for (const b of scan.batches) {
    for (const op of b.ops) {
      const rule = image.apply(op);
      if (rule)
        throw new WalCorruptionError(
          path,
          b.offset,
          rule,
          'a record that breaks it (its CRC is valid: written so by a bug, or damaged before it was checksummed)',
          dataDir,
        );
      if (op.kind === OpKind.Entries) meta.maxIndex = Math.max(meta.maxIndex, op.entries[op.entries.length - 1]!.index);
    }
  }
  return meta;
}
