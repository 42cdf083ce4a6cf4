// Job ids and job array element ids. A job array (`-J "sweep[1-1000]"`) has one job id, like any
// job; its element INDEX is addressed as `ID[INDEX]` and is, everywhere a number names a job (the
// state's job map, dispatch and status facts, the worker protocol), the number
// ARRAY_ELEMENT_ID_BASE + ID * ARRAY_INDEX_SPAN + INDEX. Plain job ids stay below the base, so the
// two never meet, and every layer that moves job ids around moves elements unchanged.

/** Element ids start here (2^52: still a safe integer with room for ID * SPAN + INDEX). */
export const ARRAY_ELEMENT_ID_BASE = 2 ** 52;
/** An element's index is below this. */
export const ARRAY_INDEX_SPAN = 10_000_000;
/** The largest array index (LSF's indices start at 1). */
export const ARRAY_INDEX_MAX = ARRAY_INDEX_SPAN - 1;
/** The largest job id that can own an array (ids above it cannot: their element ids would not be safe integers). */
export const ARRAY_JOB_ID_MAX = Math.floor((Number.MAX_SAFE_INTEGER - ARRAY_ELEMENT_ID_BASE) / ARRAY_INDEX_SPAN) - 1;

export function elementId(arrayId: number, index: number): number {
  return ARRAY_ELEMENT_ID_BASE + arrayId * ARRAY_INDEX_SPAN + index;
}

export function isElementId(id: number): boolean {
  return id >= ARRAY_ELEMENT_ID_BASE;
}

/** The array an element id belongs to (0 for a plain job id). */
export function arrayIdOf(id: number): number {
  return id < ARRAY_ELEMENT_ID_BASE ? 0 : Math.floor((id - ARRAY_ELEMENT_ID_BASE) / ARRAY_INDEX_SPAN);
}

/** An element's index (0 for a plain job id). */
export function arrayIndexOf(id: number): number {
  return id < ARRAY_ELEMENT_ID_BASE ? 0 : (id - ARRAY_ELEMENT_ID_BASE) % ARRAY_INDEX_SPAN;
}

/** `42` or `42[7]`: how users see and write a job id. */
export function formatJobId(id: number): string {
  return id < ARRAY_ELEMENT_ID_BASE ? String(id) : `${arrayIdOf(id)}[${arrayIndexOf(id)}]`;
}

const JOB_ID_RE = /^([1-9][0-9]{0,15})(?:\[([1-9][0-9]{0,6})\])?$/;

/** `42` → 42, `42[7]` → the element's id; null when `text` is neither. */
export function parseJobId(text: string): number | null {
  const m = JOB_ID_RE.exec(text.trim());
  if (m === null) return null;
  const id = Number(m[1]);
  if (!Number.isSafeInteger(id) || id >= ARRAY_ELEMENT_ID_BASE) return null;
  if (m[2] === undefined) return id;
  if (id > ARRAY_JOB_ID_MAX) return null;
  return elementId(id, Number(m[2]));
}
