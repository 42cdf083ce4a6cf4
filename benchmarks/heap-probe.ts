// The live JS heap of a daemon: a full garbage collection through its inspector, then the heap in
// use (Chrome DevTools Protocol: HeapProfiler.collectGarbage, Runtime.getHeapUsage). The heap
// in use that /metrics reports rises and falls with the garbage not yet collected (in the
// mixed-load bench it swung 35-90 MiB within a minute); after a full collection it is what the
// process keeps, so a leak shows as a rising line. The daemon must run with
// `--inspect=127.0.0.1:0` (TestCluster: XCE_TEST_NODE_ARGS); its log gives the address.

import WebSocket from 'ws';
import type { Proc } from '../harness/cluster.js';

const PROBE_TIMEOUT_MS = 10_000;
const DEVTOOLS_URL_RE = /Debugger listening on (ws:\/\/127\.0\.0\.1:\d+\/[0-9a-f-]+)/;

/** The inspector's WebSocket address from a daemon's log, or null when it has none. */
export function inspectorUrl(p: Proc): string | null {
  for (const line of p.log) {
    const m = DEVTOOLS_URL_RE.exec(line);
    if (m) return m[1]!;
  }
  return null;
}

/** Collects the garbage of the daemon at `url` and answers its heap in use, in MiB. */
export function liveHeapMib(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`no answer from the inspector at ${url} within ${PROBE_TIMEOUT_MS} ms`));
    }, PROBE_TIMEOUT_MS);
    const done = (err: Error | null, mib?: number): void => {
      clearTimeout(timer);
      ws.close();
      if (err !== null) reject(err);
      else resolve(mib!);
    };
    ws.on('error', (err) => done(err));
    ws.on('open', () => ws.send(JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' })));
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as {
        id?: number;
        result?: { usedSize?: number };
        error?: { message: string };
      };
      if (m.error !== undefined) done(new Error(`inspector: ${m.error.message}`));
      else if (m.id === 1) ws.send(JSON.stringify({ id: 2, method: 'Runtime.getHeapUsage' }));
      else if (m.id === 2) done(null, (m.result?.usedSize ?? NaN) / 1024 ** 2);
    });
  });
}
