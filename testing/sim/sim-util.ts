// Small helpers of the whole-controller simulator: canonical JSON (what a client sees of a result),
// a fact's byte key and byte equality, letting every microtask run between events, and the texts
// of errors and log fields in the trace.

/** JSON with sorted keys: what a client sees of a result, whatever the key order in memory. */
export function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => {
    if (x === null || typeof x !== 'object' || Array.isArray(x)) return x;
    const o = x as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(o).sort()) out[k] = o[k];
    return out;
  });
}

/** FNV-1a of a fact's bytes, for finding the client request a committed entry carries. */
export function bytesKey(b: Uint8Array): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < b.length; i++) {
    h ^= b[i]!;
    h = Math.imul(h, 0x01000193);
  }
  return `${h >>> 0}:${b.length}`;
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Lets every pending microtask run (setImmediate fires after the whole microtask queue). */
export function drainMicrotasks(): Promise<void> {
  return new Promise<void>((r) => setImmediate(r));
}

export function describe(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

export function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, x: unknown) =>
      x instanceof Uint8Array ? `<${x.byteLength} bytes>` : typeof x === 'bigint' ? String(x) : x,
    );
  } catch {
    return String(v);
  }
}
