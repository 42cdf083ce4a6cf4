// The crash test: start crash-child, SIGKILL it at a seeded random moment, reopen the WAL and check
// that it reads back exactly the log the child had after some save at or after the last one it
// acknowledged, so every acknowledged save is present and intact. Repeat on the same directory.

import { spawn } from 'node:child_process';
import { appendFile, open, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CrashModel, entryData, prng, snapshotContent } from './crash-model.js';
import { SnapshotStore } from './snapshot-store.js';
import type { Entry } from '../raft/types.js';
import { OpKind, encodeBatch, opBytes } from './record.js';
import { scanSegment } from './segment.js';
import type { RecoveredLog } from './wal.js';
import { Wal } from './wal.js';

export interface CrashRunOptions {
  readonly dir: string;
  readonly seed: number;
  readonly kills: number;
  readonly appenders?: number;
  readonly segmentBytes?: number;
  /** WalOptions.preallocateBytes of the child (default 0): its segments end in zeros when killed. */
  readonly preallocateBytes?: number;
  /** The kill lands uniformly within this many ms after the child reports it is ready. */
  readonly killWithinMs?: number;
  /** Stop before this much wall time is spent, even if fewer kills were done. */
  readonly budgetMs?: number;
  readonly onKill?: (report: KillReport) => void;
}

export interface KillReport {
  readonly kill: number;
  readonly ackedSave: number;
  readonly recoveredSave: number;
  readonly lastIndex: number;
  readonly firstIndex: number;
  readonly tornTailBytes: number;
}

export interface CrashRunReport {
  readonly kills: number;
  readonly saves: number;
  readonly tornTails: number;
}

/** The child must not run unbounded if a kill is late. */
const CHILD_SAVES_MAX = 5_000_000;
/**
 * How far past the last ack the parent read the recovered state may be. Durable saves the parent
 * never heard of are not only the ones in flight at the kill (at most one per appender): the
 * child's `ack` lines go through Node's stdout, which queues them in the child's memory once the
 * pipe's socket buffer is full (a loaded parent reading late; each small write takes a whole
 * socket buffer slot), and a SIGKILL loses that queue. Saves are numbered and the model's states
 * differ, so a state past the ack is still recognised exactly; what is lost data or a wrong log,
 * a state before the ack or no state at all, is still caught.
 */
const UNREAD_SAVES_MAX = 100_000;
const CHILD_TIMEOUT_MS = 30_000;

export class CrashCheckError extends Error {
  override name = 'CrashCheckError';
}

export async function runCrashTest(o: CrashRunOptions): Promise<CrashRunReport> {
  const appenders = o.appenders ?? 8;
  const segmentBytes = o.segmentBytes ?? 64 * 1024;
  const killWithinMs = o.killWithinMs ?? 150;
  const budgetMs = o.budgetMs ?? 60_000;
  const rng = prng(o.seed ^ 0x5bd1e995);
  const model = new CrashModel(o.seed); // tracks the state the WAL last recovered to
  const started = Date.now();
  let tornTails = 0;
  let kill = 0;
  for (; kill < o.kills && Date.now() - started < budgetMs; kill++) {
    const acked = await runAndKill(
      o.dir,
      o.seed,
      appenders,
      [segmentBytes, o.preallocateBytes ?? 0],
      model.saveNo,
      Math.floor(rng() * killWithinMs),
    );
    // SIGKILL leaves the page cache whole; a power loss can also leave the last write partly on
    // disk. Simulate that every third kill: append part of a record (or zeros) to the last segment
    // (with preallocation: write it where the next record goes, over the zeros).
    if (kill % 3 === 2) await appendTornWrite(o.dir, rng, (o.preallocateBytes ?? 0) > 0);
    const { wal, recovered } = await Wal.open(o.dir, {
      segmentBytes,
      preallocateBytes: o.preallocateBytes ?? 0,
      logger: { info: () => undefined, warn: () => undefined },
    });
    try {
      if (recovered.tornTail) tornTails++;
      checkIntegrity(recovered, kill, o.seed);
      matchState(model, recovered, Math.max(acked, model.saveNo), UNREAD_SAVES_MAX, kill, o.seed);
    } finally {
      await wal.close();
    }
    o.onKill?.({
      kill,
      ackedSave: acked,
      recoveredSave: model.saveNo,
      lastIndex: recovered.lastIndex,
      firstIndex: recovered.firstIndex,
      tornTailBytes: recovered.tornTail?.bytesCut ?? 0,
    });
  }
  return { kills: kill, saves: model.saveNo, tornTails };
}

/** Starts the child from save `resume`, kills it `delayMs` after it is ready; returns the last ack. */
function runAndKill(
  dir: string,
  seed: number,
  appenders: number,
  [segmentBytes, preallocateBytes]: readonly [number, number],
  resume: number,
  delayMs: number,
): Promise<number> {
  const sizes = [String(segmentBytes), String(resume), String(CHILD_SAVES_MAX), String(preallocateBytes)];
  return killChild('./crash-child.js', [dir, String(seed), String(appenders), ...sizes], resume, delayMs);
}

/** Runs a child script of this folder, SIGKILLs it `delayMs` after it prints `ready`; returns its last `ack`. */
function killChild(scriptName: string, args: string[], lastAckBefore: number, delayMs: number): Promise<number> {
  const script = fileURLToPath(new URL(scriptName, import.meta.url));
  const resume = lastAckBefore;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let lastAck = resume;
    let stderr = '';
    let killed = false;
    const guard = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, CHILD_TIMEOUT_MS);
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr = (stderr + s).slice(-4000)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith('ack ')) {
        const n = Number(line.slice(4));
        if (n <= lastAck) reject(new CrashCheckError(`acks out of order: ${n} after ${lastAck}`));
        lastAck = n;
      } else if (line.startsWith('ready')) {
        setTimeout(() => {
          killed = true;
          child.kill('SIGKILL');
        }, delayMs);
      }
    });
    child.on('error', reject);
    // 'close' fires after the child is reaped and its stdout drained: every printed ack is counted.
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      if (killed && signal === 'SIGKILL') resolve(lastAck);
      else reject(new CrashCheckError(`crash child exited by itself (code ${code}, signal ${signal}):\n${stderr}`));
    });
  });
}

async function appendTornWrite(dir: string, rng: () => number, intoZeros: boolean): Promise<void> {
  const names = (await readdir(dir)).filter((n) => n.endsWith('.wal')).sort();
  const last = join(dir, names[names.length - 1]!);
  const entries: Entry[] = [{ index: 1, term: 1, type: 0, data: new Uint8Array(2000).fill(7) }];
  const rec = encodeBatch([{ kind: OpKind.Entries, entries }], 4 + opBytes({ kind: OpKind.Entries, entries }));
  const torn =
    rng() < 0.5
      ? rec.subarray(0, 1 + Math.floor(rng() * (rec.length - 1)))
      : new Uint8Array(1 + Math.floor(rng() * 4096));
  if (!intoZeros) return appendFile(last, torn);
  const scan = scanSegment(await readFile(last));
  const fh = await open(last, 'r+');
  try {
    await fh.write(torn, 0, torn.length, scan.problem === undefined ? scan.validBytes : scan.fileBytes);
  } finally {
    await fh.close();
  }
}

export interface SnapshotCrashRunOptions {
  readonly location: string;
  readonly seed: number;
  readonly kills: number;
  readonly killWithinMs?: number;
  readonly budgetMs?: number;
}

/**
 * The snapshot store's crash test: a child commits snapshot after snapshot and is SIGKILLed at a
 * seeded random moment; reopening must show a current snapshot at or after the last acknowledged
 * one (at most one later: the one being committed), whole, with the content of its index.
 */
export async function runSnapshotCrashTest(o: SnapshotCrashRunOptions): Promise<{ kills: number; lastIndex: number }> {
  const rng = prng(o.seed ^ 0x27d4eb2f);
  const started = Date.now();
  let acked = 0;
  let kill = 0;
  for (; kill < o.kills && Date.now() - started < (o.budgetMs ?? 60_000); kill++) {
    acked = await killChild(
      './snapshot-crash-child.js',
      [o.location, String(acked + 1)],
      acked,
      Math.floor(rng() * (o.killWithinMs ?? 400)),
    );
    const store = await SnapshotStore.open(o.location);
    try {
      const latest = store.latest();
      const index = latest?.meta.index ?? 0;
      if (index < acked || index > acked + 1) {
        throw new CrashCheckError(
          `seed ${o.seed} kill ${kill}: snapshot store holds index ${index}, but snapshot ${acked} was acknowledged (and at most ${acked + 1} begun)`,
        );
      }
      if (latest) {
        const { data } = await store.readAll(); // checks every chunk's presence and SHA-256
        if (Buffer.compare(data, Buffer.from(snapshotContent(index))) !== 0) {
          throw new CrashCheckError(
            `seed ${o.seed} kill ${kill}: snapshot ${index} reads back with other content than was written`,
          );
        }
      }
      acked = index;
    } finally {
      await store.close();
    }
  }
  return { kills: kill, lastIndex: acked };
}

function checkIntegrity(r: RecoveredLog, kill: number, seed: number): void {
  for (let k = 0; k < r.entries.length; k++) {
    const e = r.entries[k]!;
    if (e.index !== r.firstIndex + k)
      throw new CrashCheckError(
        `seed ${seed} kill ${kill}: entry at position ${k} has index ${e.index}, expected ${r.firstIndex + k}`,
      );
    const want = entryData(e.index, e.term);
    if (Buffer.compare(Buffer.from(e.data), Buffer.from(want)) !== 0) {
      throw new CrashCheckError(`seed ${seed} kill ${kill}: entry ${e.index} (term ${e.term}) holds damaged data`);
    }
  }
}

/**
 * Advances `model` to the first save number ≥ `acked` whose state equals what was recovered,
 * trying at most `window` saves past `acked` (the saves in flight at the kill).
 */
function matchState(
  model: CrashModel,
  r: RecoveredLog,
  acked: number,
  window: number,
  kill: number,
  seed: number,
): void {
  while (model.saveNo < acked) model.next();
  for (let tries = 0; tries <= window; tries++) {
    if (sameState(model, r)) return;
    model.next();
  }
  throw new CrashCheckError(
    `seed ${seed} kill ${kill}: LOST ACKNOWLEDGED DATA or served a wrong log: the recovered log ` +
      `(entries ${r.firstIndex}..${r.lastIndex}, hard state ${JSON.stringify(r.hardState)}) equals no state ` +
      `between acknowledged save #${acked} and save #${acked + window}`,
  );
}

function sameState(m: CrashModel, r: RecoveredLog): boolean {
  if (r.lastIndex !== m.lastIndex) return false;
  const a = r.hardState,
    b = m.hardState;
  if (a.term !== b.term || a.vote !== b.vote || a.commit !== b.commit) return false;
  // Compaction may only have removed committed entries.
  if (r.firstIndex - 1 > b.commit) return false;
  for (const e of r.entries) if (m.terms[e.index - 1] !== e.term) return false;
  return true;
}
