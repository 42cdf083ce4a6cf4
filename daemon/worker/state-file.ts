// What a worker remembers across ITS OWN restart: the statuses not yet acknowledged by a leader,
// where each run was (so a restarted worker adopts a job still running, or reports what became of
// it), and the (jobId, run) keys it ran recently (so a late duplicate `start` is not run again).
// One small JSON file, replaced atomically (write a temporary file, fsync, rename, fsync the
// directory): a crash leaves either the old file or the new one, never a torn one. The worker's
// saves while it runs jobs are asynchronous (saveAsync: the fsyncs do not block its event loop);
// each save is numbered, and one that completes after a later one was installed is dropped.

import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, writeSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { StatusFrame } from '../worker-protocol.js';

export const STATE_FILE_NAME = 'xcecd-state.json';
export const STATE_FILE_BYTES_MAX = 64 * 1024 * 1024;
export const STATE_VERSION = 1;

const JobEndSchema = z.strictObject({ exitCode: z.number().int().nullable(), signal: z.string().nullable() });

export const SavedRunSchema = z.strictObject({
  jobId: z.number().int().positive(),
  run: z.number().int().positive(),
  phase: z.enum(['setup', 'job', 'teardown']),
  pgid: z.number().int().positive().nullable(),
  procStart: z.string().nullable(),
  end: JobEndSchema.nullable(),
  jobReason: z.string().nullable(),
  pid: z.number().int().positive().nullable(),
  startedAt: z.number().int().nonnegative().nullable(),
});
export type SavedRun = z.infer<typeof SavedRunSchema>;

export const WorkerStateSchema = z.strictObject({
  version: z.literal(STATE_VERSION),
  host: z.string().min(1),
  statuses: z.array(StatusFrame),
  runs: z.array(SavedRunSchema),
  recent: z.array(z.string()),
});
export type WorkerState = z.infer<typeof WorkerStateSchema>;

/**
 * A state to save whose `recent` list comes as the bytes of its JSON array, in pieces
 * (Executor.recentJson: kept up to date as runs end, so a save does not stringify up to 16,384
 * keys). The file is the same as for the WorkerState with that list.
 */
export interface WorkerStateToSave extends Omit<WorkerState, 'recent'> {
  readonly recentJson: readonly Buffer[];
}

const CLOSE_STATE = Buffer.from('}');

/** The file's bytes: `JSON.stringify` of the state, `recent` spliced in as its last key when it comes as bytes. */
export function stateBytes(state: WorkerState | WorkerStateToSave): Buffer {
  if (!('recentJson' in state)) return Buffer.from(JSON.stringify(state));
  const { recentJson, ...rest } = state;
  const head = JSON.stringify({ ...rest, recent: [] }); // ends with `"recent":[]}`
  return Buffer.concat([Buffer.from(head.slice(0, -'[]}'.length)), ...recentJson, CLOSE_STATE]);
}

export class StateFileError extends Error {
  override readonly name = 'StateFileError';
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
  }
}

export class StateFile {
  readonly path: string;

  constructor(readonly dir: string) {
    this.path = join(dir, STATE_FILE_NAME);
  }

  /** The saved state; null when there is none yet. Throws StateFileError when it cannot be used (and says what to do). */
  load(host: string): WorkerState | null {
    let text: string;
    try {
      if (statSync(this.path).size > STATE_FILE_BYTES_MAX)
        throw new StateFileError(
          this.path,
          `larger than ${STATE_FILE_BYTES_MAX} bytes; move it away to start without it`,
        );
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      throw new StateFileError(
        this.path,
        `not JSON (${(err as Error).message}); move it away to start without it (undelivered statuses in it are lost)`,
      );
    }
    const r = WorkerStateSchema.safeParse(raw);
    if (!r.success) {
      const i = r.error.issues[0];
      throw new StateFileError(this.path, `not a worker state file: ${i?.path.join('.') ?? ''}: ${i?.message ?? ''}`);
    }
    if (r.data.host !== host) {
      throw new StateFileError(
        this.path,
        `belongs to host ${r.data.host}, not ${host}; give each worker its own --state-dir`,
      );
    }
    return r.data;
  }

  /** Saves so far (each takes the next number); the number of the file installed last. */
  private saves = 0;
  private installed = 0;
  private dirMade = false;

  /** Writes the state now (blocking: shutdown and restore). */
  save(state: WorkerState | WorkerStateToSave): void {
    const n = ++this.saves;
    this.makeDir();
    const tmp = `${this.path}.tmp`;
    const fd = openSync(tmp, 'w', 0o600);
    try {
      writeSync(fd, stateBytes(state));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.install(tmp, n);
    const dfd = openSync(this.dir, 'r');
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  }

  /**
   * Writes the state as it is now (taken at once) without blocking on the disk; resolves once it
   * is durable, or at once when a later save was installed first (this one is then dropped). One
   * at a time: the caller waits for the last one before it starts the next.
   */
  async saveAsync(state: WorkerState | WorkerStateToSave): Promise<void> {
    const n = ++this.saves;
    const text = stateBytes(state);
    this.makeDir();
    const tmp = `${this.path}.tmp-async`;
    const fh = await open(tmp, 'w', 0o600);
    try {
      await fh.writeFile(text);
      await fh.sync();
    } finally {
      await fh.close();
    }
    if (n < this.installed) return rm(tmp, { force: true });
    // Renamed here, in this thread: the order of renames is the order of the saves.
    this.install(tmp, n);
    const dh = await open(this.dir, 'r');
    try {
      await dh.sync();
    } finally {
      await dh.close();
    }
  }

  private makeDir(): void {
    if (this.dirMade) return;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    this.dirMade = true;
  }

  private install(tmp: string, n: number): void {
    renameSync(tmp, this.path);
    this.installed = n;
  }
}
