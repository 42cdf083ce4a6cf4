// A follower's REST write, forwarded to the leader (daemon/rest/server.ts says why it proxies
// rather than redirecting). The request goes once, with its Idempotency-Key (the follower made one
// when the client sent none), so a client that retries after a failed forward is still applied once.
// A forwarded request is marked, and a node that is not the leader either answers 503 instead of
// forwarding again: no loops while leadership moves.

import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';

/** The header a forwarded request carries: the id of the node that forwarded it. */
export const FORWARDED_HEADER = 'xce-forwarded-by';

/** A forward that has not answered in this long is given up (the client retries with its key). */
export const PROXY_TIMEOUT_MS = 30_000;

/** The headers that go to the leader; nothing else of the client's request is passed on. */
const PASSED = ['authorization', 'content-type', 'accept', 'idempotency-key'] as const;

/** The leader's answer headers given back to the client. */
const RETURNED = ['content-type', 'location', 'retry-after', 'www-authenticate', 'idempotency-key', 'xce-served-by'];

export interface ProxyAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

export class LeaderUnreachableError extends Error {
  override readonly name = 'LeaderUnreachableError';
}

/**
 * Sends `method path` with `body` to the leader at `address` (`host:port`) and returns its answer.
 * Throws LeaderUnreachableError when the leader cannot be reached or does not answer in time.
 */
export function forward(
  address: string,
  method: string,
  path: string,
  headers: IncomingHttpHeaders,
  extra: Record<string, string>,
  body: Buffer | null,
  bodyBytesMax: number,
): Promise<ProxyAnswer> {
  const out: Record<string, string> = { ...extra };
  for (const h of PASSED) {
    const v = headers[h];
    if (typeof v === 'string' && out[h] === undefined) out[h] = v;
  }
  if (body !== null) out['content-length'] = String(body.length);
  const [host, port] = splitAddress(address);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host, port, method, path, headers: out, timeout: PROXY_TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        // The leader's answers are bounded by the API's own limits; this only guards the follower.
        if (bytes > bodyBytesMax * 4) req.destroy(new Error(`the leader's answer exceeds ${bodyBytesMax * 4} bytes`));
        else chunks.push(c);
      });
      res.on('end', () => {
        const kept: Record<string, string> = {};
        for (const h of RETURNED) {
          const v = res.headers[h];
          if (typeof v === 'string') kept[h] = v;
        }
        resolve({ status: res.statusCode ?? 502, headers: kept, body: Buffer.concat(chunks) });
      });
      res.on('error', (err) => reject(new LeaderUnreachableError(err.message)));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer in ${PROXY_TIMEOUT_MS} ms`)));
    req.on('error', (err) => reject(new LeaderUnreachableError(err.message)));
    req.end(body ?? undefined);
  });
}

/** `127.0.0.1:7101` → ['127.0.0.1', 7101]; `[::1]:7101` → ['::1', 7101]. */
function splitAddress(address: string): [string, number] {
  const i = address.lastIndexOf(':');
  const host = address.slice(0, i).replace(/^\[(.*)\]$/, '$1');
  return [host, Number(address.slice(i + 1))];
}
