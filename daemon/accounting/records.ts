// One cleaned job in the accounting store: its record (the value of its `j!` key: the CleanFact's
// index and time, then the job), the secondary keys written and dropped with it (keys.ts), and the
// report buckets it counts in.

import { decodeJob, encodeJob } from '../../statemachine/snapshot.js';
import type { Job } from '../../statemachine/state.js';
import { BUCKET_MS, PREFIX, bucketKey, nameKey } from './keys.js';
import { addJob, emptySums, groupOf, type JobSummaryEntry, type Sums } from './summary.js';

/** A cleaned job as the store keeps it. */
export interface StoredJob {
  readonly job: Job;
  /** The log index of the CleanFact that removed it from the state, and that fact's time. */
  readonly cleanIndex: number;
  readonly cleanTimeMs: number;
}

/** The record's head: the clean index and the clean time, two little-endian float64. */
const HEAD_BYTES = 16;

export function encodeRecord(job: Job, cleanIndex: number, cleanTimeMs: number): Uint8Array {
  const head = new Uint8Array(HEAD_BYTES);
  const dv = new DataView(head.buffer);
  dv.setFloat64(0, cleanIndex, true);
  dv.setFloat64(8, cleanTimeMs, true);
  const body = encodeJob(job);
  const value = new Uint8Array(HEAD_BYTES + body.length);
  value.set(head);
  value.set(body, HEAD_BYTES);
  return value;
}

/** Throws on a record that does not decode (the store names itself in the error). */
export function decodeRecord(v: Uint8Array): StoredJob {
  const dv = new DataView(v.buffer, v.byteOffset, v.byteLength);
  return {
    cleanIndex: dv.getFloat64(0, true),
    cleanTimeMs: dv.getFloat64(8, true),
    job: decodeJob(v.subarray(HEAD_BYTES)),
  };
}

/** The clean index of a record, without decoding its job. */
export function cleanIndexOfRecord(v: Uint8Array): number {
  return new DataView(v.buffer, v.byteOffset, 8).getFloat64(0, true);
}

/** A job's keys by user, profile and queue (each holds its end-time key). */
export function nameKeys(s: JobSummaryEntry, id: number): string[] {
  return [
    nameKey(PREFIX.user, s.user, id),
    nameKey(PREFIX.profile, s.profile ?? '(none)', id),
    nameKey(PREFIX.queue, s.queue, id),
  ];
}

/** Counts a job in the minute and the hour bucket of its end time (`sums` by bucket key). */
export function countInBuckets(sums: Map<string, Sums>, s: JobSummaryEntry): void {
  for (const span of ['m', 'h'] as const) {
    const k = bucketKey(span, s.endMs - (s.endMs % BUCKET_MS[span]), groupOf(s));
    let b = sums.get(k);
    if (b === undefined) sums.set(k, (b = emptySums()));
    addJob(b, s);
  }
}
