// The accounting store's keys (LevelDB, ordered bytewise). Numbers are fixed-width hex so that key
// order is numeric order; names (users, profiles, queues: letters, digits, `_`, `.`, `-`) sort
// after the `!` separator, so a prefix range of one name never runs into a longer one.
//
//   j!<id>                     the job's final record: u64 clean index, i64 clean time, Job message
//   e!<end ms>!<id>            its summary (summary.ts), in end-time order: lists and reports
//   u!<user>!<id>, p!<profile>!<id>, q!<queue>!<id>   secondary keys (value: the end-time key)
//   c!<clean index>!<id>       by the log index of the CleanFact that removed it (catch-up ranges)
//   b!<span>!<start ms>!<user>/<profile>/<queue>   report buckets (a minute `m`, an hour `h`): sums
//   m!gaps                     log ranges this controller never applied (installed by snapshot)

const hex = (n: number, width: number): string => n.toString(16).padStart(width, '0');

/** Ids, indexes and times fit in 13 hex digits (2^52). */
const W = 13;

export const PREFIX = {
  job: 'j!',
  end: 'e!',
  user: 'u!',
  profile: 'p!',
  queue: 'q!',
  clean: 'c!',
  bucket: 'b!',
} as const;

export const KEY_GAPS = 'm!gaps';
/** The highest clean index whose records are all durable (written before each snapshot). */
export const KEY_FLUSHED = 'm!flushed';

/** The key just above every key of `prefix`. */
export const end = (prefix: string): string => `${prefix}\xff`;

export const jobKey = (id: number): string => `${PREFIX.job}${hex(id, W)}`;
export const endKey = (endMs: number, id: number): string => `${PREFIX.end}${hex(Math.max(0, endMs), W)}!${hex(id, W)}`;
export const endPrefixAt = (endMs: number): string => `${PREFIX.end}${hex(Math.max(0, endMs), W)}`;
export const nameKey = (prefix: string, name: string, id: number): string => `${prefix}${name}!${hex(id, W)}`;
export const namePrefix = (prefix: string, name: string): string => `${prefix}${name}!`;
export const cleanKey = (index: number, id: number): string => `${PREFIX.clean}${hex(index, W)}!${hex(id, W)}`;
export const cleanPrefixAt = (index: number): string => `${PREFIX.clean}${hex(index, W)}`;

/** The job id at the end of a key (every kind above ends with it). */
export const idOfKey = (key: string): number => parseInt(key.slice(key.lastIndexOf('!') + 1), 16);
/** The end time of an `e!` key. */
export const endMsOfKey = (key: string): number => parseInt(key.slice(PREFIX.end.length, PREFIX.end.length + W), 16);

export type BucketSpan = 'm' | 'h';
export const BUCKET_MS: Record<BucketSpan, number> = { m: 60_000, h: 3_600_000 };
export const bucketPrefix = (span: BucketSpan, startMs: number): string =>
  `${PREFIX.bucket}${span}!${hex(startMs, W)}!`;
export const bucketKey = (span: BucketSpan, startMs: number, group: string): string =>
  `${bucketPrefix(span, startMs)}${group}`;
/** The start time of a bucket key. */
export const bucketStartOfKey = (key: string): number => parseInt(key.slice(4, 4 + W), 16);
export const bucketGroupOfKey = (key: string): string => key.slice(4 + W + 1);
