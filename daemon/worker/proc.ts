// Process-group helpers. Every layer runs in its own session and process group (spawned
// `detached`), so a kill reaches everything the layer started unless a process makes its own
// session (a cgroup would be needed to catch those).

import { readFileSync } from 'node:fs';

/** Sends a signal to a process group; false when the group is gone. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * The start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat): with the
 * pid it identifies a process across a pid reuse. Null when /proc is not there or the process is gone.
 */
export function procStartTicks(pid: number): string | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) is in parentheses and may contain spaces: split after the last ')'.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return rest[19] ?? null; // field 22 overall = index 19 after the state field (field 3)
}

/** Whether the process `pid` still exists and, when `startTicks` is known, is the same process. */
export function processAlive(pid: number, startTicks: string | null): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (startTicks === null) return true;
  const now = procStartTicks(pid);
  return now === null || now === startTicks;
}

/** Keeps the last `max` bytes written to it: a layer's output tail for a failure reason. */
export class TailBuffer {
  private chunks: Buffer[] = [];
  private bytes = 0;
  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    while (this.bytes - (this.chunks[0]?.length ?? 0) >= this.max && this.chunks.length > 1) {
      this.bytes -= (this.chunks.shift() as Buffer).length;
    }
  }

  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.max)).toString('utf8');
  }

  /** The last non-empty line, cut to `max` characters. */
  lastLine(max: number): string {
    const lines = this.text()
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '');
    const l = lines[lines.length - 1] ?? '';
    return l.length > max ? `${l.slice(0, max)}…` : l;
  }
}
