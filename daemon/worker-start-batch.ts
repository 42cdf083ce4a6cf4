// Several starts in one frame (issue 14): a worker that sends `x-xce-worker-features: start-batch`
// may get `start` {startInfos: [...]} carrying the starts of one scheduling pass for its host; it
// reads each as the single form `start` {startInfo} would be (each acked on its own; one it cannot
// read gets its launch error). The single form stays; a worker without the feature gets only it.

import {
  describeIssues,
  StartFrame,
  type StartInfo,
  WORKER_FRAME_BYTES_MAX,
  WorkerFrameError,
} from './worker-protocol.js';

/** Worker side: a single-job `start` frame's parsed JSON value, validated (WorkerFrameError names the field). */
export function parseStartValue(raw: unknown): StartFrame {
  const r = StartFrame.safeParse(raw);
  if (!r.success) throw new WorkerFrameError(`bad controller frame: ${describeIssues(r.error.issues)}`);
  return r.data;
}

/** What the worker can take beyond the base protocol, comma-separated (old controllers ignore it). */
export const WORKER_HEADER_FEATURES = 'x-xce-worker-features';
/** The feature: `start` frames carrying several jobs (`startInfos`). */
export const FEATURE_START_BATCH = 'start-batch';
/**
 * The feature: `registered` carries `hosts`, the hosts the cluster lists, from which the worker
 * sizes its reconnect spread after losing the leader (daemon/worker/redial.ts).
 */
export const FEATURE_FAILOVER_SPREAD = 'failover-spread';
/**
 * The feature: the worker's WebSocket ping is its heartbeat. The leader counts each ping of a
 * registered worker as hearing from its host, as it does a `heartbeat` frame, and names the feature
 * in `registered` {features} to a worker that named it; that worker then sends the ping alone each
 * period, without the `heartbeat` frame beside it (one frame less per host and period for the leader
 * to decrypt, read, parse and check; the pong answers the ping as before).
 */
export const FEATURE_PING_HEARTBEAT = 'ping-heartbeat';
/** Starts in one several-job `start` frame at most (more go in further frames). */
export const STARTS_PER_FRAME_MAX = 512;

/**
 * Worker side: the starts a several-job `start` frame carries, each as the value of the single-job
 * frame it stands for (`{type: 'start', startInfo}`, to read with parseStartValue, or
 * unreadableStartValue when that refuses it); null for any other frame, or one that is not JSON or
 * too large (parseControllerFrame says what is wrong with it). Throws WorkerFrameError for a
 * several-job frame whose list is not one (not an array, empty, or more than STARTS_PER_FRAME_MAX).
 */
export function startsOf(frame: string | Uint8Array): unknown[] | null {
  const text = typeof frame === 'string' ? frame : Buffer.from(frame).toString('utf8');
  if (!text.includes('"startInfos"') || Buffer.byteLength(text) > WORKER_FRAME_BYTES_MAX) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof raw !== 'object' || raw === null || (raw as { type?: unknown }).type !== 'start') return null;
  const keys = Object.keys(raw);
  if (!keys.includes('startInfos')) return null;
  const list = (raw as { startInfos: unknown }).startInfos;
  if (keys.length !== 2 || !Array.isArray(list) || list.length === 0 || list.length > STARTS_PER_FRAME_MAX)
    throw new WorkerFrameError(
      `bad controller frame: startInfos: a start frame carries either startInfo or startInfos, a list of 1 to ${STARTS_PER_FRAME_MAX} start infos`,
    );
  return list.map((startInfo: unknown) => ({ type: 'start', startInfo }));
}

/**
 * Controller side: the frames that carry `infos` (already checked with parseStartInfo) to a worker
 * with the start-batch feature: as few several-job `start` frames as the count and byte limits allow.
 */
export function encodeStartFrames(infos: readonly StartInfo[]): string[] {
  const out: string[] = [];
  const head = '{"type":"start","startInfos":[';
  const budget = WORKER_FRAME_BYTES_MAX - head.length - 2;
  let parts: string[] = [];
  let bytes = 0;
  for (const info of infos) {
    const one = JSON.stringify(info);
    const n = Buffer.byteLength(one) + 1;
    if (parts.length > 0 && (parts.length >= STARTS_PER_FRAME_MAX || bytes + n > budget)) {
      out.push(`${head}${parts.join(',')}]}`);
      parts = [];
      bytes = 0;
    }
    parts.push(one);
    bytes += n;
  }
  if (parts.length > 0) out.push(`${head}${parts.join(',')}]}`);
  return out;
}

/** The features a worker names in its WORKER_HEADER_FEATURES header (unknown ones are ignored). */
export function workerFeatures(headers: Record<string, string | string[] | undefined>): Set<string> {
  const h = headers[WORKER_HEADER_FEATURES];
  const text = Array.isArray(h) ? h.join(',') : (h ?? '');
  return new Set(
    text
      .split(',')
      .map((f) => f.trim())
      .filter((f) => f !== ''),
  );
}
