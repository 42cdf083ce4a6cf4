// The frames between the launcher (native-spawner.ts) and its native fork server xce-spawn
// (native/xce-spawn.c, whose header comment is the protocol's reference). Every frame, both ways:
// u32 length of what follows, u8 type, u32 id, the type's body; little-endian (xce-spawn refuses
// to compile on a big-endian host). Requests are encoded here; events are decoded here from a
// byte stream cut anywhere, and anything the C side would never write is an error naming the byte.
// Imports only node: modules: the launcher process loads it.

/** Limits as the wrapper's `ulimit` sets them (limits.ts): cpu seconds, memory bytes. */
export interface SpawnLimits {
  readonly cpu_s?: number;
  readonly memory_bytes?: number;
}

/** What xce-spawn is to start: one job, already checked by direct-job.ts. */
export interface NativeSpawnRequest {
  readonly file: string;
  readonly argv0: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  /** The absolute paths of the job's stdout and stderr files, opened `>>`-style by xce-spawn. */
  readonly out: string;
  readonly err: string;
  readonly limits: SpawnLimits;
}

export type SpawnEvent =
  | { readonly t: 'spawned'; readonly id: number; readonly pid: number }
  | { readonly t: 'failed'; readonly id: number; readonly errno: number }
  | { readonly t: 'fallback'; readonly id: number }
  | { readonly t: 'unwritable'; readonly id: number; readonly which: 'stdout' | 'stderr' }
  | { readonly t: 'ended'; readonly id: number; readonly exitCode: number | null; readonly signal: number | null };

const REQ_SPAWN = 1;
const REQ_SIGNAL = 2;
const EVENT_TYPES = ['spawned', 'failed', 'fallback', 'unwritable', 'ended'] as const;
/** The body length of each event type (index = type - 1). */
const EVENT_BODY = [4, 4, 0, 1, 8] as const;
/** Type and id. */
const HEAD = 5;

export class SpawnProtocolError extends Error {
  override readonly name = 'SpawnProtocolError';
}

/** A string for the C side: NUL-terminated, so it must hold no NUL itself (Node's spawn refuses those too). */
function cString(s: string, what: string): Buffer {
  if (s.includes('\0'))
    throw new SpawnProtocolError(`the ${what} of the job contains a NUL byte: ${JSON.stringify(s)}`);
  return Buffer.from(`${s}\0`);
}

/** A whole limit for the C side's i64, or -1: none. */
function limit(v: number | undefined, what: string): bigint {
  if (v === undefined) return -1n;
  if (!Number.isSafeInteger(v) || v < 0)
    throw new SpawnProtocolError(`the ${what} limit ${v} is not a whole number >= 0`);
  return BigInt(v);
}

/** One spawn request frame. */
export function encodeSpawn(id: number, r: NativeSpawnRequest): Buffer {
  const strings = [
    cString(r.file, 'file'),
    cString(r.cwd, 'working directory'),
    cString(r.out, 'stdout path'),
    cString(r.err, 'stderr path'),
    cString(r.argv0, 'argv[0]'),
    ...r.args.map((a, i) => cString(a, `argv[${i + 1}]`)),
    ...Object.entries(r.env).map(([k, v]) => cString(`${k}=${v}`, `environment variable ${k}`)),
  ];
  const mem = r.limits.memory_bytes === undefined ? undefined : Math.ceil(r.limits.memory_bytes / 1024);
  const head = Buffer.alloc(4 + HEAD + 24);
  head.writeUInt8(REQ_SPAWN, 4);
  head.writeUInt32LE(id, 5);
  head.writeBigInt64LE(limit(r.limits.cpu_s, 'cpu'), 9);
  head.writeBigInt64LE(limit(mem, 'memory'), 17);
  head.writeUInt32LE(1 + r.args.length, 25);
  head.writeUInt32LE(Object.keys(r.env).length, 29);
  const frame = Buffer.concat([head, ...strings]);
  frame.writeUInt32LE(frame.length - 4, 0);
  return frame;
}

/** One signal request frame: `signal` (a number) to the group of job `id`, unless it was reaped. */
export function encodeSignal(id: number, signal: number): Buffer {
  const frame = Buffer.alloc(4 + HEAD + 4);
  frame.writeUInt32LE(HEAD + 4, 0);
  frame.writeUInt8(REQ_SIGNAL, 4);
  frame.writeUInt32LE(id, 5);
  frame.writeInt32LE(signal, 9);
  return frame;
}

/** xce-spawn's events from its standard output, in whatever pieces the pipe gives them. */
export class SpawnEventDecoder {
  private pending: Buffer = Buffer.alloc(0);
  /** Bytes of the stream before `pending`: where an error is. */
  private consumed = 0;

  /** The events completed by `chunk`, in order; SpawnProtocolError on anything xce-spawn never writes. */
  push(chunk: Buffer): SpawnEvent[] {
    const buf = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const events: SpawnEvent[] = [];
    let at = 0;
    while (buf.length - at >= 4) {
      const len = buf.readUInt32LE(at);
      if (len < HEAD) this.fail(at, `a frame of ${len} bytes (at least ${HEAD})`);
      if (buf.length - at < 4 + HEAD) break;
      const type = buf.readUInt8(at + 4);
      const body = EVENT_BODY[type - 1];
      if (body === undefined) this.fail(at, `unknown event type ${type}`);
      // Every event's length is fixed by its type: a wrong one is caught before waiting for its bytes.
      if (len !== HEAD + body)
        this.fail(at, `a ${EVENT_TYPES[type - 1]} event of ${len} bytes (it has ${HEAD + body})`);
      if (buf.length - at < 4 + len) break;
      events.push(this.event(buf, at, type));
      at += 4 + len;
    }
    this.consumed += at;
    this.pending = buf.subarray(at);
    return events;
  }

  /** Whether a frame was left cut short (the stream ended in the middle of it). */
  get partial(): boolean {
    return this.pending.length > 0;
  }

  private event(buf: Buffer, at: number, type: number): SpawnEvent {
    const id = buf.readUInt32LE(at + 5);
    const b = at + 4 + HEAD;
    switch (EVENT_TYPES[type - 1]) {
      case 'spawned': {
        const pid = buf.readInt32LE(b);
        if (pid <= 0) this.fail(at, `spawned with pid ${pid}`);
        return { t: 'spawned', id, pid };
      }
      case 'failed':
        return { t: 'failed', id, errno: buf.readInt32LE(b) };
      case 'fallback':
        return { t: 'fallback', id };
      case 'unwritable': {
        const which = buf.readUInt8(b);
        if (which !== 1 && which !== 2) this.fail(at, `unwritable output ${which} (1: stdout, 2: stderr)`);
        return { t: 'unwritable', id, which: which === 1 ? 'stdout' : 'stderr' };
      }
      default: {
        const code = buf.readInt32LE(b);
        const signal = buf.readInt32LE(b + 4);
        if ((code === -1) === (signal === 0) || code < -1 || code > 255 || signal < 0)
          this.fail(at, `ended with exit code ${code} and signal ${signal} (exactly one of them)`);
        return { t: 'ended', id, exitCode: code === -1 ? null : code, signal: signal === 0 ? null : signal };
      }
    }
  }

  private fail(at: number, what: string): never {
    throw new SpawnProtocolError(`xce-spawn wrote ${what} at byte ${this.consumed + at} of its output`);
  }
}
