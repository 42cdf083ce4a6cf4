// The accounting store: the final records of the jobs that left the replicated state, in a LevelDB
// of each controller's own (`<data dir>/accounting/`), derived from the applied log: the applier
// hands it the jobs each CleanFact removed, in log order, and the snapshotter waits for
// `flushedThrough(index)` before storing a snapshot at `index` (a crash before then replays the
// CleanFact from the WAL; a record written twice changes nothing). A controller that catches up by
// a snapshot from the leader never applied the cleans in between: the range is kept (`gaps`) and
// a read of such a job says so. Keys: keys.ts; one job's record, keys and buckets: records.ts;
// reports: report.ts (buckets written here).

import { existsSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Level } from 'level';
import type { Job } from '../../statemachine/state.js';
import { ARRAY_INDEX_MAX, elementId } from '../../model/job-id.js';
import { AccountingStoreError, causeOf, parseGaps, wholeNumber, type Gap } from './store-errors.js';
import {
  BUCKET_MS,
  KEY_FLUSHED,
  KEY_GAPS,
  PREFIX,
  bucketPrefix,
  cleanKey,
  cleanPrefixAt,
  end,
  endKey,
  endMsOfKey,
  endPrefixAt,
  idOfKey,
  jobKey,
  nameKey,
  namePrefix,
  type BucketSpan,
} from './keys.js';
import { cleanIndexOfRecord, countInBuckets, decodeRecord, encodeRecord, nameKeys, type StoredJob } from './records.js';
import { addSums, decodeSummary, encodeSummary, summaryOf, type JobSummaryEntry, type Sums } from './summary.js';

export { AccountingStoreError, type Gap } from './store-errors.js';
export type { StoredJob } from './records.js';

type Db = Level<string, Uint8Array>;
const utf8 = new TextEncoder();
const text = new TextDecoder();
const KEY_COUNT = 'm!count';

export interface ListQuery {
  /** Jobs that ended at or after this time. */
  readonly sinceMs?: number;
  readonly untilMs?: number;
  readonly user?: string;
  readonly profile?: string;
  readonly queue?: string;
  readonly state?: string;
  readonly limit: number;
  /**
   * A cursor: only jobs listed after this one (the last row of the previous page): by end time, or
   * by id when the query names a user, profile or queue (the order list gives them in).
   */
  readonly after?: { readonly id: number; readonly endMs: number };
}

export interface StoreStats {
  readonly records: number;
  readonly approximateBytes: number;
  /** End time of the oldest record kept; null when none. */
  readonly oldestEndMs: number | null;
}

/** Records written per LevelDB batch at most. */
const WRITE_BATCH_JOBS_MAX = 5_000;

interface Pending {
  readonly index: number;
  readonly timeMs: number;
  readonly jobs: readonly Job[];
}

export class AccountingStore {
  private queue: Pending[] = [];
  private writing: Promise<void> | null = null;
  private failure: Error | null = null;
  /** Highest clean index written (not necessarily synced). */
  private writtenIndex = 0;
  private syncedIndex = 0;
  private gapList: Gap[] = [];
  private count = 0;
  /** End time of the oldest record, cached (undefined: not known yet). */
  private oldest: number | null | undefined = undefined;

  private constructor(
    private readonly db: Db,
    readonly path: string,
    /** The store did not exist before this open. */
    readonly created: boolean,
  ) {}

  /** Opens (creating if needed) the store in `dataDir`; throws AccountingStoreError naming its path. */
  static async open(dataDir: string): Promise<AccountingStore> {
    const path = join(dataDir, 'accounting');
    const created = !existsSync(path);
    const db: Db = new Level<string, Uint8Array>(path, { keyEncoding: 'utf8', valueEncoding: 'view' });
    try {
      await db.open();
    } catch (e) {
      throw new AccountingStoreError(path, `LevelDB cannot open it (${causeOf(e)})`);
    }
    const store = new AccountingStore(db, path, created);
    try {
      const [gaps, flushed, count] = await db.getMany([KEY_GAPS, KEY_FLUSHED, KEY_COUNT]);
      store.gapList = gaps === undefined ? [] : parseGaps(text.decode(gaps));
      store.syncedIndex = store.writtenIndex =
        flushed === undefined ? 0 : wholeNumber(text.decode(flushed), KEY_FLUSHED);
      store.count = count === undefined ? 0 : wholeNumber(text.decode(count), KEY_COUNT);
    } catch (e) {
      await db.close().catch(() => undefined);
      throw e instanceof AccountingStoreError ? e : new AccountingStoreError(path, causeOf(e));
    }
    return store;
  }

  // ---- writing (the applier's side) ----

  /** The jobs the CleanFact at `index` (of time `timeMs`) removed: written in order, in the background. */
  record(index: number, timeMs: number, jobs: readonly Job[]): void {
    this.queue.push({ index, timeMs, jobs });
    this.pump();
  }

  /** Resolves once every record of clean indexes ≤ `index` is durable (synced); rejects if a write failed. */
  async flushedThrough(index: number): Promise<void> {
    while (this.writing !== null) await this.writing;
    if (this.failure !== null) throw this.failure;
    if (this.syncedIndex >= index && this.queue.length === 0) return;
    const through = Math.max(index, this.writtenIndex);
    await this.db.put(KEY_FLUSHED, utf8.encode(String(through)), { sync: true });
    this.syncedIndex = through;
  }

  /** This controller installed a snapshot at `throughIndex` over its state at `afterIndex`. */
  async addGap(afterIndex: number, throughIndex: number): Promise<void> {
    if (throughIndex <= afterIndex) return;
    this.gapList = [...this.gapList, [afterIndex, throughIndex] as const];
    await this.db.put(KEY_GAPS, utf8.encode(JSON.stringify(this.gapList)), { sync: true });
  }

  get gaps(): readonly Gap[] {
    return this.gapList;
  }

  private pump(): void {
    if (this.writing !== null || this.queue.length === 0) return;
    this.writing = (async () => {
      while (this.queue.length > 0 && this.failure === null) {
        const take: Pending[] = [];
        let n = 0;
        while (this.queue.length > 0 && (take.length === 0 || n + this.queue[0]!.jobs.length <= WRITE_BATCH_JOBS_MAX)) {
          const p = this.queue.shift()!;
          take.push(p);
          n += p.jobs.length;
        }
        try {
          await this.writeBatch(take);
        } catch (e) {
          this.failure = new Error(`writing to the accounting store ${this.path} failed: ${causeOf(e)}`);
        }
      }
    })().finally(() => {
      this.writing = null;
      if (this.queue.length > 0 && this.failure === null) this.pump();
    });
  }

  private async writeBatch(take: readonly Pending[]): Promise<void> {
    const all: Array<{ job: Job; index: number; timeMs: number }> = [];
    for (const p of take) for (const job of p.jobs) all.push({ job, index: p.index, timeMs: p.timeMs });
    // A CleanFact replayed after a restart writes what is already here: those are skipped, so that
    // the report buckets count each job once.
    const present = all.length === 0 ? [] : await this.db.getMany(all.map((a) => jobKey(a.job.id)));
    const batch = this.db.batch();
    const sums = new Map<string, Sums>();
    let added = 0;
    all.forEach(({ job, index, timeMs }, i) => {
      if (present[i] !== undefined) return;
      const s = summaryOf(job);
      const ek = endKey(s.endMs, job.id);
      const ekBytes = utf8.encode(ek);
      batch.put(jobKey(job.id), encodeRecord(job, index, timeMs));
      batch.put(ek, utf8.encode(encodeSummary(s)));
      for (const k of nameKeys(s, job.id)) batch.put(k, ekBytes);
      batch.put(cleanKey(index, job.id), ekBytes);
      countInBuckets(sums, s);
      if (this.oldest === null || (this.oldest !== undefined && s.endMs < this.oldest)) this.oldest = s.endMs;
      added++;
    });
    const keys = [...sums.keys()];
    const before = keys.length === 0 ? [] : await this.db.getMany(keys);
    keys.forEach((k, i) => {
      const b = sums.get(k)!;
      const old = before[i];
      if (old !== undefined) addSums(b, JSON.parse(text.decode(old)) as Sums);
      batch.put(k, utf8.encode(JSON.stringify(b)));
    });
    const last = take[take.length - 1]!.index;
    this.count += added;
    batch.put(KEY_COUNT, utf8.encode(String(this.count)));
    await batch.write();
    this.writtenIndex = Math.max(this.writtenIndex, last);
  }

  // ---- reading ----

  async get(id: number): Promise<StoredJob | null> {
    const v = await this.db.get(jobKey(id));
    return v === undefined ? null : this.decode(v);
  }

  /** The elements of job array `arrayId` in the store, in index order (their ids sit together). */
  async elementsOf(arrayId: number): Promise<StoredJob[]> {
    const out: StoredJob[] = [];
    const range = { gte: jobKey(elementId(arrayId, 0)), lte: jobKey(elementId(arrayId, ARRAY_INDEX_MAX)) };
    for await (const [, v] of this.db.iterator(range)) out.push(this.decode(v));
    return out;
  }

  private decode(v: Uint8Array): StoredJob {
    try {
      return decodeRecord(v);
    } catch (e) {
      throw new AccountingStoreError(this.path, `a job record does not decode (${causeOf(e)})`);
    }
  }

  /** Cleaned jobs, newest end time first, filtered; at most `limit`. */
  async list(q: ListQuery): Promise<StoredJob[]> {
    const out: StoredJob[] = [];
    const byName: [string, string] | null =
      q.user !== undefined
        ? [PREFIX.user, q.user]
        : q.profile !== undefined
          ? [PREFIX.profile, q.profile]
          : q.queue !== undefined
            ? [PREFIX.queue, q.queue]
            : null;
    const fits = (s: JobSummaryEntry): boolean =>
      (q.sinceMs === undefined || s.endMs >= q.sinceMs) &&
      (q.untilMs === undefined || s.endMs < q.untilMs) &&
      (q.user === undefined || s.user === q.user) &&
      (q.profile === undefined || (s.profile ?? '(none)') === q.profile) &&
      (q.queue === undefined || s.queue === q.queue) &&
      (q.state === undefined || s.state === q.state);
    const ids: number[] = [];
    if (byName !== null) {
      // By id, newest first: the end-time key each points at holds the summary to filter on.
      const p = namePrefix(byName[0], byName[1]);
      const lt = q.after !== undefined ? nameKey(byName[0], byName[1], q.after.id) : end(p);
      for await (const [, ek] of this.db.iterator({ gt: p, lt, reverse: true })) {
        const key = text.decode(ek);
        const v = await this.db.get(key);
        if (v === undefined) continue;
        if (fits(decodeSummary(idOfKey(key), endMsOfKey(key), text.decode(v)))) ids.push(idOfKey(key));
        if (ids.length >= q.limit) break;
      }
    } else {
      const until = q.untilMs !== undefined ? endPrefixAt(q.untilMs) : end(PREFIX.end);
      const after = q.after !== undefined ? endKey(q.after.endMs, q.after.id) : until;
      const range = {
        gte: q.sinceMs !== undefined ? endPrefixAt(q.sinceMs) : PREFIX.end,
        lt: after < until ? after : until,
        reverse: true,
      };
      for await (const [key, v] of this.db.iterator(range)) {
        if (fits(decodeSummary(idOfKey(key), endMsOfKey(key), text.decode(v)))) ids.push(idOfKey(key));
        if (ids.length >= q.limit) break;
      }
    }
    const values = ids.length === 0 ? [] : await this.db.getMany(ids.map(jobKey));
    for (const v of values) if (v !== undefined) out.push(this.decode(v));
    return out;
  }

  /** Summaries of the jobs that ended in [fromMs, toMs), in end order. */
  async *summaries(fromMs: number, toMs: number): AsyncGenerator<JobSummaryEntry> {
    if (toMs <= fromMs) return;
    for await (const [key, v] of this.db.iterator({ gte: endPrefixAt(fromMs), lt: endPrefixAt(toMs) }))
      yield decodeSummary(idOfKey(key), endMsOfKey(key), text.decode(v));
  }

  /** Bucket sums of `span` starting in [fromMs, toMs), by group (user/profile/queue). */
  async *buckets(span: BucketSpan, fromMs: number, toMs: number): AsyncGenerator<[group: string, sums: Sums]> {
    if (toMs <= fromMs) return;
    const lt = bucketPrefix(span, toMs);
    for await (const [key, v] of this.db.iterator({ gte: bucketPrefix(span, fromMs), lt })) {
      yield [key.slice(key.lastIndexOf('!') + 1), JSON.parse(text.decode(v)) as Sums];
    }
  }

  /** The ids of the jobs cleaned at log indexes in (afterIndex, throughIndex]. */
  async cleanedIn(afterIndex: number, throughIndex: number): Promise<number[]> {
    const ids: number[] = [];
    for await (const key of this.db.keys({ gt: end(cleanPrefixAt(afterIndex)), lt: end(cleanPrefixAt(throughIndex)) }))
      ids.push(idOfKey(key));
    return ids;
  }

  async stats(): Promise<StoreStats> {
    if (this.oldest === undefined) {
      this.oldest = null;
      for await (const key of this.db.keys({ gte: PREFIX.end, lt: end(PREFIX.end), limit: 1 }))
        this.oldest = endMsOfKey(key);
    }
    let approximateBytes = 0;
    for (const f of await readdir(this.path)) approximateBytes += (await stat(join(this.path, f))).size;
    return { records: this.count, approximateBytes, oldestEndMs: this.oldest };
  }

  /**
   * Drops the records of jobs that ended before `cutoffMs` (accounting_retention) rounded down to
   * a whole hour, a batch at a time, with their buckets. Returns how many records went.
   */
  async compact(cutoffMs: number): Promise<number> {
    while (this.writing !== null) await this.writing;
    let done!: () => void;
    this.writing = new Promise<void>((r) => (done = r));
    try {
      return await this.compactNow(cutoffMs);
    } finally {
      this.writing = null;
      done();
      this.pump();
    }
  }

  private async compactNow(cutoffAtMs: number): Promise<number> {
    // Whole hours only, so that a report's buckets and its single jobs always count the same jobs.
    const cutoffMs = cutoffAtMs - (cutoffAtMs % BUCKET_MS.h);
    let removed = 0;
    for (;;) {
      const batch = this.db.batch();
      let n = 0;
      for await (const [key, v] of this.db.iterator({ gte: PREFIX.end, lt: endPrefixAt(cutoffMs), limit: 5000 })) {
        const id = idOfKey(key);
        const s = decodeSummary(id, endMsOfKey(key), text.decode(v));
        const rec = await this.db.get(jobKey(id));
        if (rec !== undefined) batch.del(cleanKey(cleanIndexOfRecord(rec), id));
        batch.del(key);
        batch.del(jobKey(id));
        for (const k of nameKeys(s, id)) batch.del(k);
        n++;
      }
      if (n === 0) break;
      this.count = Math.max(0, this.count - n);
      batch.put(KEY_COUNT, utf8.encode(String(this.count)));
      await batch.write();
      removed += n;
    }
    for (const span of ['m', 'h'] as const) {
      const whole = cutoffMs - (cutoffMs % BUCKET_MS[span]);
      await this.db.clear({ gte: bucketPrefix(span, 0), lt: bucketPrefix(span, whole) });
    }
    if (removed > 0) this.oldest = undefined;
    return removed;
  }

  async close(): Promise<void> {
    while (this.writing !== null) await this.writing;
    await this.db.close();
  }
}
