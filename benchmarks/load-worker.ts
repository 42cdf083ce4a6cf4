// One load-generator thread of load-gen.ts `measureSpread`: opens and warms its clients, says
// `ready`, waits for `go`, runs its loops and posts every latency back; the benchmark then ends it.

import { parentPort, workerData } from 'node:worker_threads';
import { openLoad, runLoops, type FromLoadWorker, type LoadWorkerData } from './load-gen.js';

const port = parentPort;
if (port === null) throw new Error('load-worker.js runs only as a worker thread of load-gen.ts');
const data = workerData as LoadWorkerData;
const post = (m: FromLoadWorker) => port.postMessage(m);
try {
  const load = await openLoad(data.target, data.clients, data.tag);
  const go = new Promise<void>((resolve) => port.once('message', () => resolve()));
  post({ kind: 'ready' });
  await go;
  const outcome = await runLoops(data.clients, data.seconds, (i) => load.submit(i));
  load.close();
  post({ kind: 'done', outcome });
} catch (err) {
  post({ kind: 'error', message: err instanceof Error ? err.message : String(err) });
}
// The benchmark terminates this thread once it has the message (closing the port here could drop it).
