// The `/worker` endpoint of a controller: the worker hub, scheduler and dispatcher (leader only).
// Until those land (the scheduling issue), workers are told plainly that this controller cannot
// take them yet.
import type { Controller } from './controller.js';
import { refuse } from './http-server.js';

export function attachWorkerHub(_controller: Controller) {
  return (_req: unknown, socket: import('node:stream').Duplex) => refuse(socket, 404, 'this controller has no worker hub yet');
}
