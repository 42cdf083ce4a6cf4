// The thread of a PasswordPool (password-pool.ts): verifies one password at a time with a
// synchronous scrypt, on this thread, so that the work never waits in (or fills) libuv's thread
// pool, where the WAL's fdatasync runs.

import { parentPort } from 'node:worker_threads';
import { AuthError, verifyPasswordSync } from './auth.js';

export interface VerifyRequest {
  readonly id: number;
  readonly password: string;
  readonly stored: string;
}

export type VerifyReply =
  | { readonly id: number; readonly ok: boolean }
  | { readonly id: number; readonly error: { readonly badHash: boolean; readonly message: string } };

const port = parentPort;
if (port === null) throw new Error('password-worker.js runs as a worker thread of a PasswordPool, not on its own');

port.on('message', (m: VerifyRequest) => {
  let reply: VerifyReply;
  try {
    reply = { id: m.id, ok: verifyPasswordSync(m.password, m.stored) };
  } catch (err) {
    reply = {
      id: m.id,
      error: { badHash: err instanceof AuthError && err.code === 'bad-hash', message: (err as Error).message },
    };
  }
  port.postMessage(reply);
});
