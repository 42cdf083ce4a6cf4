// The WAL's writer: the queue of accepted ops, group commit (one record and one fdatasync for
// every save that joined while the previous one was on disk), segment roll-over, and the
// fail-stop after a failed write. It also splits a save into ops that each fit one record.
import type { Entry, HardState } from '../raft/types.js';
import { WalFailedError, WalOverloadedError } from './errors.js';
import { fsyncDir } from './fsync.js';
import { PENDING_BYTES_MAX, RECORD_PAYLOAD_BYTES_MAX } from './limits.js';
import type { LogImage } from './log-image.js';
import {
  type Op,
  type SnapshotBase,
  BATCH_OVERHEAD_BYTES,
  ENTRIES_OP_OVERHEAD_BYTES,
  ENTRY_OVERHEAD_BYTES,
  HARD_STATE_OP_BYTES,
  OpKind,
  SEGMENT_HEADER_RECORD_BYTES,
  SNAPSHOT_MARK_OP_BYTES,
  encodeBatch,
} from './record.js';
import { SegmentWriter } from './segment.js';
import type { WalLogger } from './options.js';

/** One segment as the WAL tracks it. */
export interface SegmentMeta {
  readonly seq: number;
  readonly firstIndex: number;
  readonly path: string;
  /** The highest entry index ever written to this segment (firstIndex - 1 when none). */
  maxIndex: number;
}

interface Waiter {
  resolve(): void;
  reject(e: unknown): void;
}

/** One op waiting for the disk; the last op of a save carries the save's waiter. */
interface QueuedOp {
  readonly op: Op;
  readonly bytes: number;
  /** The log's last index once this op is applied. */
  readonly lastIndexAfter: number;
  readonly waiter: Waiter | undefined;
}

/** How records reach the disk (WalOptions). */
export interface WriteOptions {
  /** fdatasync on the event loop instead of the thread pool. */
  readonly syncOnEventLoop: boolean;
  /** Zero-fill this far past the last record before writing past the zeros (0: never). */
  readonly preallocateBytes: number;
}

/** The state as written, in write order: what a new segment's header must carry. */
export interface WrittenState {
  lastIndex: number;
  hardState: HardState;
  base: SnapshotBase;
}

export class GroupCommit {
  private readonly queue: QueuedOp[] = [];
  private queueHead = 0;
  private pendingBytes = 0;
  /** True while flushLoop runs; `idle` settles when it stops. */
  running = false;
  idle: Promise<void> = Promise.resolve();
  failed: WalFailedError | undefined;

  constructor(
    private readonly dir: string,
    private readonly segmentBytes: number,
    private readonly logger: WalLogger,
    /** The segment files held, oldest first; the last one is being written. */
    readonly segments: SegmentMeta[],
    public active: SegmentWriter,
    /** The log as accepted by save() (validation), ahead of the disk. */
    private readonly accepted: LogImage,
    private readonly written: WrittenState,
    private readonly writing: WriteOptions,
  ) {}

  /**
   * Queues ops for the flusher once `accept` (validation + the accepted image's update) passes;
   * each queued op remembers the last index right after it, which a new segment header needs.
   */
  enqueue(ops: Op[], accept: () => Error | undefined, startNow = false): Promise<void> {
    let bytes = 0;
    const sized = ops.map((op) => {
      const b =
        op.kind === OpKind.Entries
          ? entriesOpBytes(op.entries)
          : op.kind === OpKind.HardState
            ? HARD_STATE_OP_BYTES
            : SNAPSHOT_MARK_OP_BYTES;
      bytes += b;
      return b;
    });
    if (this.pendingBytes + bytes > PENDING_BYTES_MAX) {
      return Promise.reject(
        new WalOverloadedError(
          `${this.pendingBytes} B already wait for the disk; PENDING_BYTES_MAX is ${PENDING_BYTES_MAX} B. Retry once earlier saves resolve.`,
        ),
      );
    }
    const refused = accept();
    if (refused) return Promise.reject(refused);
    const lastIndexAfter = this.accepted.lastIndex;
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject };
      for (let k = 0; k < ops.length; k++) {
        const op = ops[k]!;
        // Split runs of one save: only the last one ends at the save's last index.
        const after = op.kind === OpKind.Entries ? op.entries[op.entries.length - 1]!.index : lastIndexAfter;
        this.queue.push({
          op,
          bytes: sized[k]!,
          lastIndexAfter: after,
          waiter: k === ops.length - 1 ? waiter : undefined,
        });
      }
      this.pendingBytes += bytes;
      this.kick(startNow);
    });
  }

  /**
   * Starts the flusher unless it runs. It starts after the current microtasks, so saves issued
   * together (a burst of appenders woken by one resolution) share its first record. The flusher
   * re-checks the queue after every fdatasync and clears `running` in the same synchronous step as
   * its last check, so a save queued at any moment is either seen by the running loop or starts a
   * new one. `startNow` starts it within this call instead (its first write and fdatasync request
   * are issued before kick returns).
   */
  private kick(startNow: boolean): void {
    if (this.running) return;
    this.running = true;
    if (startNow) this.idle = this.flushQueued();
    else
      queueMicrotask(() => {
        this.idle = this.flushQueued();
      });
  }

  /** Writes queued ops, one record (≤ RECORD_PAYLOAD_BYTES_MAX) per write+fdatasync, until none is left. */
  private async flushQueued(): Promise<void> {
    // No await may separate the loop's last check from `running = false` (see kick()).
    for (;;) {
      if (this.queueHead >= this.queue.length || this.failed) {
        this.running = false;
        return;
      }
      // Take whole ops from the head while they fit (always at least one: each fits alone).
      let payload = BATCH_OVERHEAD_BYTES;
      const start = this.queueHead;
      let end = start;
      while (
        end < this.queue.length &&
        (end === start || payload + this.queue[end]!.bytes <= RECORD_PAYLOAD_BYTES_MAX)
      ) {
        payload += this.queue[end]!.bytes;
        end++;
      }
      const taken = this.queue.slice(start, end);
      this.queueHead = end;
      if (this.queueHead > 4096 && this.queueHead * 2 > this.queue.length) {
        this.queue.splice(0, this.queueHead);
        this.queueHead = 0;
      }
      try {
        const rec = encodeBatch(
          taken.map((q) => q.op),
          payload,
        );
        if (this.active.bytes + rec.length > this.segmentBytes && this.active.bytes > SEGMENT_HEADER_RECORD_BYTES)
          await this.roll();
        const ahead = this.writing.preallocateBytes;
        if (ahead > 0) await this.active.zeroAhead(rec.length, ahead, this.segmentBytes);
        await this.active.append(rec, this.writing.syncOnEventLoop);
      } catch (e) {
        this.fail(new WalFailedError(this.active.path, e), taken);
        this.running = false;
        return;
      }
      this.pendingBytes -= payload - BATCH_OVERHEAD_BYTES;
      const seg = this.segments[this.segments.length - 1]!;
      for (const q of taken) {
        const op = q.op;
        this.written.lastIndex = q.lastIndexAfter;
        if (op.kind === OpKind.Entries) {
          if (q.lastIndexAfter > seg.maxIndex) seg.maxIndex = q.lastIndexAfter;
        } else if (op.kind === OpKind.HardState) {
          this.written.hardState = op.hardState;
        } else {
          this.written.base = op.base;
        }
      }
      for (const q of taken) q.waiter?.resolve();
      // Saves queued during that fdatasync are waiting. Before writing them, let the appenders just
      // woken queue their next saves too (whatever their depth of awaits), so that they join this
      // record instead of each paying for an fdatasync of its own. When nothing waits, stop: the
      // next save kicks a new flush at once (no event-loop turn on a lone appender's path).
      if (this.queueHead < this.queue.length) await new Promise<void>((r) => setImmediate(r));
    }
  }

  /** Starts the next segment: create + header + fdatasync, then fsync the directory for its name. */
  private async roll(): Promise<void> {
    const prev = this.active;
    const next = await SegmentWriter.create(this.dir, {
      seq: prev.seq + 1,
      firstIndex: this.written.lastIndex + 1,
      hardState: this.written.hardState,
      base: this.written.base,
    });
    this.active = next;
    this.segments.push({ seq: next.seq, firstIndex: next.firstIndex, path: next.path, maxIndex: next.firstIndex - 1 });
    await fsyncDir(this.dir);
    await prev.close();
  }

  /** Fail-stop: reject what was taken and everything queued; refuse every later call. */
  private fail(err: WalFailedError, taken: QueuedOp[]): void {
    this.failed = err;
    for (const q of taken) q.waiter?.reject(err);
    for (let k = this.queueHead; k < this.queue.length; k++) this.queue[k]!.waiter?.reject(err);
    this.queue.length = 0;
    this.queueHead = 0;
    this.logger.warn(err.message);
  }
}

function entriesOpBytes(es: readonly Entry[]): number {
  let n = ENTRIES_OP_OVERHEAD_BYTES;
  for (const e of es) n += ENTRY_OVERHEAD_BYTES + e.data.length;
  return n;
}

/** A save's ops: its entries in runs that each fit one record with room for a hard state op
 * beside them, then its hard state. */
export function opsForSave(hardState: HardState | undefined, entries: readonly Entry[]): Op[] {
  const ops: Op[] = [];
  if (entries.length > 0) {
    // Split into runs that each fit one record with room for a hard state op beside them.
    const budget = RECORD_PAYLOAD_BYTES_MAX - BATCH_OVERHEAD_BYTES - HARD_STATE_OP_BYTES - ENTRIES_OP_OVERHEAD_BYTES;
    let start = 0;
    let bytes = 0;
    for (let k = 0; k < entries.length; k++) {
      const b = ENTRY_OVERHEAD_BYTES + entries[k]!.data.length;
      if (bytes + b > budget && k > start) {
        ops.push({ kind: OpKind.Entries, entries: entries.slice(start, k) });
        start = k;
        bytes = 0;
      }
      bytes += b;
    }
    ops.push({ kind: OpKind.Entries, entries: start === 0 ? entries : entries.slice(start) });
  }
  if (hardState) ops.push({ kind: OpKind.HardState, hardState });
  return ops;
}
