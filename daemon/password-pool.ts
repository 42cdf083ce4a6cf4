// Password verification off the event loop AND off libuv's thread pool. scrypt costs tens of
// milliseconds of CPU and Node's async crypto runs it on libuv's pool (4 threads by default),
// the same pool as the WAL's fdatasync: 300 wrong-password logins made a submit wait 16.5 s for
// its fsync. So verifications run on this pool's own worker threads (node:worker_threads, 1 by
// default, at most 2), one at a time per thread, with a bounded queue: past it a verification is
// refused at once (PasswordPoolBusyError) rather than queued without end.
//
// A thread is started on first use and kept; it holds the process open only while it works.

import { threadId as mainThreadId, Worker } from 'node:worker_threads';
import { AuthError } from './auth.js';
import type { VerifyReply, VerifyRequest } from './password-worker.js';

export const PASSWORD_THREADS_DEFAULT = 1;
export const PASSWORD_THREADS_MAX = 2;
/** Verifications waiting for a thread; one more is refused. */
export const PASSWORD_QUEUE_MAX = 32;

export class PasswordPoolBusyError extends Error {
  override readonly name = 'PasswordPoolBusyError';
}

/** What the login path needs: a yes/no for a password against a stored hash. */
export interface PasswordVerifier {
  verify(password: string, stored: string): Promise<boolean>;
}

interface Task {
  readonly id: number;
  readonly password: string;
  readonly stored: string;
  resolve(ok: boolean): void;
  reject(err: Error): void;
}

interface Thread {
  readonly worker: Worker;
  task: Task | null;
}

export class PasswordPool implements PasswordVerifier {
  private readonly threads: Thread[] = [];
  private readonly queue: Task[] = [];
  private nextId = 1;
  private closed = false;
  /** Verifications finished (matched or not), for metrics and tests. */
  verified = 0;

  constructor(
    readonly threadsMax = PASSWORD_THREADS_DEFAULT,
    readonly queueMax = PASSWORD_QUEUE_MAX,
  ) {
    if (!Number.isInteger(threadsMax) || threadsMax < 1 || threadsMax > PASSWORD_THREADS_MAX)
      throw new RangeError(`password threads must be 1..${PASSWORD_THREADS_MAX}, not ${threadsMax}`);
    if (!Number.isInteger(queueMax) || queueMax < 0)
      throw new RangeError(`password queue must be a whole number ≥ 0, not ${queueMax}`);
  }

  /** The worker threads' ids (never the main thread's): for status and tests. */
  threadIds(): number[] {
    return this.threads.map((t) => t.worker.threadId).filter((id) => id !== mainThreadId);
  }

  /** Verifications waiting for a thread. */
  get queued(): number {
    return this.queue.length;
  }

  verify(password: string, stored: string): Promise<boolean> {
    if (this.closed) return Promise.reject(new PasswordPoolBusyError('the password pool is closed'));
    const idle = this.threads.some((t) => t.task === null) || this.threads.length < this.threadsMax;
    if (!idle && this.queue.length >= this.queueMax) {
      return Promise.reject(
        new PasswordPoolBusyError(`${this.queue.length} password checks are already waiting; retry in a few seconds`),
      );
    }
    return new Promise<boolean>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, password, stored, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let t = this.threads.find((x) => x.task === null);
      if (t === undefined) {
        if (this.threads.length >= this.threadsMax) return;
        t = this.start();
      }
      const task = this.queue.shift() as Task;
      t.task = task;
      t.worker.ref();
      t.worker.postMessage({ id: task.id, password: task.password, stored: task.stored } satisfies VerifyRequest);
    }
  }

  private start(): Thread {
    const worker = new Worker(new URL('./password-worker.js', import.meta.url));
    const t: Thread = { worker, task: null };
    worker.unref();
    worker.on('message', (m: VerifyReply) => {
      const task = t.task;
      if (task === null || task.id !== m.id) return;
      t.task = null;
      worker.unref();
      this.verified++;
      if ('ok' in m) task.resolve(m.ok);
      else
        task.reject(
          m.error.badHash
            ? new AuthError('bad-hash', m.error.message)
            : new Error(`password check failed: ${m.error.message}`),
        );
      this.pump();
    });
    const lost = (why: string): void => {
      const i = this.threads.indexOf(t);
      if (i < 0) return;
      this.threads.splice(i, 1);
      t.task?.reject(new Error(`the password thread ${why}`));
      t.task = null;
      if (!this.closed) this.pump();
    };
    worker.on('error', (err) => lost(`failed: ${err.message}`));
    worker.on('exit', (code) => lost(`exited with code ${code}`));
    this.threads.push(t);
    return t;
  }

  /** Stops the threads; waiting and running verifications are refused. */
  async close(): Promise<void> {
    this.closed = true;
    for (const task of this.queue.splice(0)) task.reject(new PasswordPoolBusyError('the password pool is closed'));
    await Promise.all(this.threads.map((t) => t.worker.terminate()));
  }
}

let shared: PasswordPool | null = null;

/** The process's pool (one per controller process, whatever the number of API servers in it). */
export function sharedPasswordPool(): PasswordPool {
  shared ??= new PasswordPool();
  return shared;
}
