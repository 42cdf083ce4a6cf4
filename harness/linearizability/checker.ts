// A linearizability checker in the style of Porcupine (Wing & Gong's search with Lowe's
// memoization): find an order of the operations that respects real time (an operation that
// completed before another began comes first) and that a sequential model accepts. The search
// walks the history's call/return events, linearizes a call when the model accepts it, and
// backtracks when it meets the return of an operation it has not linearized yet. A cache of
// (set of linearized operations, model state) that were already explored keeps it from
// re-exploring the same configuration; the set is hashed incrementally (Zobrist: one random word
// per operation, XORed in and out). A step budget makes a pathological history end with
// `inconclusive` instead of hanging.

/** One client operation as recorded. `complete_ms === null`: the client gave up (no answer); the
 * operation may have taken effect or not, and its output is unknown. */
export interface Operation<I = unknown, O = unknown> {
  readonly op: string;
  readonly input: I;
  readonly output: O | null;
  readonly invoke_ms: number;
  readonly complete_ms: number | null;
  /** Who issued it (for messages only). */
  readonly client?: number | string;
}

/** A sequential specification. States are immutable: `step` returns a new one. */
export interface Model<S, I = unknown, O = unknown> {
  readonly name: string;
  init(): S;
  /** The state after `op`, or null when `op` (with its recorded output) is impossible in `state`.
   * A pending operation (`complete_ms === null`) may have any output. */
  step(state: S, op: Operation<I, O>): S | null;
  hash(state: S): number;
  equal(a: S, b: S): boolean;
  /** Why `op` cannot come next in `state` (for the violation report). */
  explain?(state: S, op: Operation<I, O>): string;
  /** Rewrites the history before the search (e.g. drops pending operations nothing observed). Must
   * keep the answer: the result is linearizable iff the input is. */
  prepare?(history: readonly Operation<I, O>[]): Operation<I, O>[];
}

/** Search steps (linearize or backtrack) before giving up with `inconclusive`. */
export const CHECK_STEPS_MAX_DEFAULT = 20_000_000;

export type CheckResult =
  | {
      readonly verdict: 'linearizable';
      readonly operations: number;
      readonly steps: number;
      readonly order: readonly number[];
    }
  | {
      readonly verdict: 'illegal';
      readonly operations: number;
      readonly steps: number;
      /** The longest prefix of operations (indices into the prepared history) the search could linearize. */
      readonly longestPrefix: readonly number[];
      /** An operation that had to come next there (its return was reached) but the model refused. */
      readonly stuck: Operation | null;
      readonly explanation: string;
    }
  | { readonly verdict: 'inconclusive'; readonly operations: number; readonly steps: number; readonly reason: string };

interface Event {
  readonly call: boolean;
  readonly op: number;
  readonly time: number;
  prev: Event | null;
  next: Event | null;
  /** For a call: its return event. */
  match: Event | null;
}

/** xorshift32: deterministic random words for the Zobrist hash (no Math.random: replayable). */
function words(n: number): Uint32Array {
  const out = new Uint32Array(n);
  let x = 0x9e3779b9;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x;
  }
  return out;
}

class Bits {
  readonly w: Uint32Array;
  constructor(n: number, from?: Uint32Array) {
    this.w = from ? new Uint32Array(from) : new Uint32Array((n + 31) >>> 5);
  }
  set(i: number): void {
    this.w[i >>> 5]! |= 1 << (i & 31);
  }
  clear(i: number): void {
    this.w[i >>> 5]! &= ~(1 << (i & 31));
  }
  equals(o: Uint32Array): boolean {
    for (let i = 0; i < this.w.length; i++) if (this.w[i] !== o[i]) return false;
    return true;
  }
}

/** Checks that `history` is linearizable with respect to `model`. */
export function checkLinearizable<S, I, O>(
  model: Model<S, I, O>,
  history: readonly Operation<I, O>[],
  opts: { stepsMax?: number } = {},
): CheckResult {
  const ops = model.prepare ? model.prepare(history) : [...history];
  return search(model, ops, eventList(ops), opts.stepsMax ?? CHECK_STEPS_MAX_DEFAULT);
}

/**
 * The calls and returns of `ops` as a doubly linked list behind a head event, sorted by time; at
 * equal times calls come first (such operations count as concurrent).
 */
function eventList(ops: readonly Operation[]): Event {
  const events: Event[] = [];
  for (let i = 0; i < ops.length; i++) {
    const o = ops[i]!;
    if (o.complete_ms !== null && o.complete_ms < o.invoke_ms)
      throw new RangeError(`operation ${i} completes (${o.complete_ms}) before it is invoked (${o.invoke_ms})`);
    const call: Event = { call: true, op: i, time: o.invoke_ms, prev: null, next: null, match: null };
    const ret: Event = { call: false, op: i, time: o.complete_ms ?? Infinity, prev: null, next: null, match: null };
    call.match = ret;
    events.push(call, ret);
  }
  events.sort((a, b) => a.time - b.time || (a.call === b.call ? a.op - b.op : a.call ? -1 : 1));
  const head: Event = { call: false, op: -1, time: -Infinity, prev: null, next: null, match: null };
  let last = head;
  for (const e of events) {
    last.next = e;
    e.prev = last;
    last = e;
  }
  return head;
}

/** Takes a linearized operation's call and return out of the list. */
function lift(call: Event): void {
  call.prev!.next = call.next;
  if (call.next) call.next.prev = call.prev;
  const r = call.match!;
  r.prev!.next = r.next;
  if (r.next) r.next.prev = r.prev;
}

/** Puts them back (backtracking), in the reverse order of lift. */
function unlift(call: Event): void {
  const r = call.match!;
  r.prev!.next = r;
  if (r.next) r.next.prev = r;
  call.prev!.next = call;
  if (call.next) call.next.prev = call;
}

/**
 * The memo of configurations already explored: (set of linearized operations, model state), keyed by
 * their hash. Returns whether this one was seen before, and remembers it when not.
 */
function configurationMemo<S>(model: { equal(a: S, b: S): boolean }): (h: number, bits: Bits, state: S) => boolean {
  const cache = new Map<number, Array<{ bits: Uint32Array; state: S }>>();
  return (h: number, bits: Bits, state: S): boolean => {
    const bucket = cache.get(h);
    if (bucket === undefined) {
      cache.set(h, [{ bits: new Uint32Array(bits.w), state }]);
      return false;
    }
    for (const c of bucket) if (bits.equals(c.bits) && model.equal(c.state, state)) return true;
    bucket.push({ bits: new Uint32Array(bits.w), state });
    return false;
  };
}

/**
 * The search (Wing & Gong, with Lowe's memo): walk the list; a call the model accepts is linearized
 * (lifted out, pushed), and the walk restarts from the head; reaching the return of an operation not
 * linearized yet means it had to come earlier, so the last choice is undone.
 */
function search<S, I, O>(
  model: Model<S, I, O>,
  ops: readonly Operation<I, O>[],
  head: Event,
  stepsMax: number,
): CheckResult {
  const n = ops.length;
  const zob = words(n);
  const seen = configurationMemo(model);
  const bits = new Bits(n);
  let setHash = 0;
  let state = model.init();
  const stack: Array<{ call: Event; state: S; setHash: number }> = [];
  let steps = 0;
  let longest: number[] = [];
  let stuck: { op: number; state: S } | null = null;
  let stuckDepth = -1;
  let entry = head.next;
  while (head.next !== null) {
    if (++steps > stepsMax) {
      const reason = `search stopped after ${stepsMax} steps with ${stack.length} of ${n} operations linearized; the history has too much concurrency for this budget`;
      return { verdict: 'inconclusive', operations: n, steps, reason };
    }
    if (entry === null) throw new Error('checker: walked off the event list (a bug)');
    if (entry.call) {
      const next = model.step(state, ops[entry.op]!);
      if (next !== null) {
        const h2 = setHash ^ zob[entry.op]!;
        bits.set(entry.op);
        if (!seen((h2 ^ Math.imul(model.hash(next), 0x85ebca6b)) >>> 0, bits, next)) {
          stack.push({ call: entry, state, setHash });
          state = next;
          setHash = h2;
          lift(entry);
          if (stack.length > longest.length) longest = stack.map((s) => s.call.op);
          entry = head.next;
          continue;
        }
        bits.clear(entry.op);
      }
      entry = entry.next;
    } else {
      // The return of an operation not linearized yet: it had to come before now. Backtrack.
      if (stack.length === longest.length && stuckDepth !== stack.length) {
        stuck = { op: entry.op, state };
        stuckDepth = stack.length;
      }
      const top = stack.pop();
      if (top === undefined) break;
      unlift(top.call);
      bits.clear(top.call.op);
      state = top.state;
      setHash = top.setHash;
      entry = top.call.next;
    }
  }
  if (head.next === null) return { verdict: 'linearizable', operations: n, steps, order: stack.map((s) => s.call.op) };
  return illegal(model, ops, steps, longest, stuck);
}

/** The verdict when no order works: the longest prefix found, and the operation the model refused after it. */
function illegal<S, I, O>(
  model: Model<S, I, O>,
  ops: readonly Operation<I, O>[],
  steps: number,
  longest: readonly number[],
  stuck: { op: number; state: S } | null,
): CheckResult {
  const n = ops.length;
  const stuckOp = stuck === null ? null : ops[stuck.op]!;
  const why =
    stuck === null || stuckOp === null
      ? 'no operation could be linearized first'
      : model.explain
        ? model.explain(stuck.state, stuckOp)
        : `${stuckOp.op} cannot come next`;
  return {
    verdict: 'illegal',
    operations: n,
    steps,
    longestPrefix: longest,
    stuck: stuckOp,
    explanation: `after linearizing ${longest.length} of ${n} operations, ${stuckOp ? describe(stuckOp) : 'an operation'} must come next but the ${model.name} model refuses it: ${why}`,
  };
}

export function describe(o: Operation): string {
  const t = `[${o.invoke_ms.toFixed(1)}, ${o.complete_ms === null ? 'pending' : o.complete_ms.toFixed(1)}] ms`;
  return `${o.op}${o.client !== undefined ? ` by client ${o.client}` : ''} ${t}`;
}
