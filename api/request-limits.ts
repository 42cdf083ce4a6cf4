// Limits of a request's envelope and of a job's limits, stated once for the zod schemas of
// protocol.ts and the hand check of submit-fast-path.ts, which must agree on them.

/** Characters of a request's access token. */
export const TOKEN_CHARS_MAX = 8192;
/** Characters of a session's client id (a random id the client picks once). */
export const SESSION_CLIENT_CHARS_MIN = 8;
export const SESSION_CLIENT_CHARS_MAX = 64;
/** Characters of one of a job's limits as typed (`-l runtime=2h`). */
export const JOB_LIMIT_CHARS_MAX = 32;
