// The sequential model of the controller's job table, as the drill sees it through the API.
//
// State: the jobs that exist, each a (marker, id) pair; the marker is the unique job name the
// drill gives every submit. Operations:
//   submit  input {marker}; output {id} (or null: the client gave up, outcome unknown).
//           Legal iff no job has that marker yet and id is greater than every id in the table:
//           ids are unique and increase in log order. Effect: the job exists.
//   list    output {jobs: [[marker, id], ...], limit}: a linearizable `jobs.list`, newest first.
//           Legal iff it is exactly the table's newest min(size, limit) jobs: a read sees every
//           submit linearized before it (so every submit that COMPLETED before the read began)
//           and none linearized after it (so none that had not begun by the read's end).
//   show    input {id}; output {marker} or {marker: null} (not found): a linearizable `jobs.show`.
//           Legal iff the table has job id with that marker, or (null) no job id.
// Requeue, kill and status changes do not change which jobs exist: they are not in this model.
//
// `prepare` (sound and complete for this model): a pending read is dropped (it constrains
// nothing); a pending submit that no read ever saw is dropped (linearizing it after everything
// else is always legal, which is the same as dropping it); a pending submit some read saw takes
// the id that read saw as its output, and completes at the latest when the first read that saw it
// completes (it must be linearized before that read).

import type { Model, Operation } from './checker.js';

export type JobTableInput = { marker: string } | { id: number } | Record<string, never>;
export type JobTableOutput =
  { id: number } | { jobs: ReadonlyArray<readonly [string, number]>; limit: number } | { marker: string | null };
export type JobTableOp = Operation<JobTableInput, JobTableOutput>;

interface Node {
  readonly marker: string;
  readonly id: number;
  readonly next: Node | null;
}

/** Newest first (ids increase, so the head has the largest id). Immutable and shared. */
export interface JobTable {
  readonly size: number;
  readonly head: Node | null;
  /** Sum of entryHash over the jobs (mod 2^32): a set hash that is cheap to keep and compare. */
  readonly hash: number;
}

function strHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function entryHash(marker: string, id: number): number {
  return (strHash(marker) ^ Math.imul(id, 0x9e3779b1)) >>> 0;
}

/** One recorded operation on the job table (`output` null: no answer was seen). */
function operation(
  op: string,
  input: JobTableInput,
  output: JobTableOutput | null,
  times: { invoke_ms: number; complete_ms: number | null },
  client: number | undefined,
): JobTableOp {
  return { op, input, output, ...times, ...(client !== undefined ? { client } : {}) };
}

export function submitOp(
  marker: string,
  id: number | null,
  invoke_ms: number,
  complete_ms: number | null,
  client?: number,
): JobTableOp {
  return operation('submit', { marker }, id === null ? null : { id }, { invoke_ms, complete_ms }, client);
}

export function listOp(
  jobs: ReadonlyArray<readonly [string, number]> | null,
  invoke_ms: number,
  complete_ms: number | null,
  limit = Number.MAX_SAFE_INTEGER,
  client?: number,
): JobTableOp {
  return operation('list', {}, jobs === null ? null : { jobs, limit }, { invoke_ms, complete_ms }, client);
}

export function showOp(
  id: number,
  marker: string | null | undefined,
  invoke_ms: number,
  complete_ms: number | null,
  client?: number,
): JobTableOp {
  return operation('show', { id }, marker === undefined ? null : { marker }, { invoke_ms, complete_ms }, client);
}

const listHashes = new WeakMap<object, number>();
function listHash(out: { jobs: ReadonlyArray<readonly [string, number]> }): number {
  let h = listHashes.get(out);
  if (h === undefined) {
    h = 0;
    for (const [m, id] of out.jobs) h = (h + entryHash(m, id)) >>> 0;
    listHashes.set(out, h);
  }
  return h;
}

function checkList(s: JobTable, out: { jobs: ReadonlyArray<readonly [string, number]>; limit: number }): string | null {
  const want = Math.min(s.size, out.limit);
  if (out.jobs.length !== want)
    return `the read returned ${out.jobs.length} jobs; the table has ${s.size}${s.size > out.limit ? ` (limit ${out.limit})` : ''}: ${differences(s, out.jobs)}`;
  if (s.size <= out.limit && listHash(out) !== s.hash) return differences(s, out.jobs);
  let node = s.head;
  for (const [m, id] of out.jobs) {
    if (node === null || node.marker !== m || node.id !== id) return differences(s, out.jobs);
    node = node.next;
  }
  return null;
}

function differences(s: JobTable, jobs: ReadonlyArray<readonly [string, number]>): string {
  const inTable = new Map<string, number>();
  for (let n = s.head; n !== null; n = n.next) inTable.set(n.marker, n.id);
  const seen = new Map(jobs.map(([m, id]) => [m, id] as const));
  const missing = [...inTable].filter(([m]) => !seen.has(m)).slice(0, 5);
  const extra = [...seen].filter(([m]) => !inTable.has(m)).slice(0, 5);
  const wrong = [...seen].filter(([m, id]) => inTable.has(m) && inTable.get(m) !== id).slice(0, 5);
  const parts: string[] = [];
  if (missing.length) parts.push(`it misses ${missing.map(([m, id]) => `${m} (job ${id})`).join(', ')}`);
  if (extra.length)
    parts.push(`it shows ${extra.map(([m, id]) => `${m} (job ${id})`).join(', ')}, not (yet) submitted`);
  if (wrong.length)
    parts.push(`it gives ${wrong.map(([m, id]) => `${m} job id ${id}, not ${inTable.get(m)}`).join(', ')}`);
  return parts.join('; ') || 'the order of the jobs differs';
}

function find(s: JobTable, id: number): Node | null {
  for (let n = s.head; n !== null && n.id >= id; n = n.next) if (n.id === id) return n;
  return null;
}

function why(s: JobTable, op: JobTableOp): string | null {
  switch (op.op) {
    case 'submit': {
      const marker = (op.input as { marker: string }).marker;
      for (let n = s.head; n !== null; n = n.next)
        if (n.marker === marker) return `${marker} already exists as job ${n.id} (applied twice?)`;
      if (op.output === null) return null;
      const id = (op.output as { id: number }).id;
      if (s.head !== null && id <= s.head.id)
        return `its id ${id} is not greater than job ${s.head.id} (${s.head.marker}), which precedes it: ids must be unique and increasing`;
      return null;
    }
    case 'list':
      return op.output === null
        ? null
        : checkList(s, op.output as { jobs: ReadonlyArray<readonly [string, number]>; limit: number });
    case 'show': {
      if (op.output === null) return null;
      const id = (op.input as { id: number }).id;
      const marker = (op.output as { marker: string | null }).marker;
      const n = find(s, id);
      if (marker === null) return n === null ? null : `job ${id} (${n.marker}) exists but the read said it does not`;
      if (n === null) return `the read saw job ${id} (${marker}), which does not exist yet`;
      return n.marker === marker ? null : `the read saw job ${id} as ${marker}; it is ${n.marker}`;
    }
    default:
      return `unknown operation ${op.op}`;
  }
}

export const jobTableModel: Model<JobTable, JobTableInput, JobTableOutput> = {
  name: 'job table',
  init: () => ({ size: 0, head: null, hash: 0 }),
  step(s, op) {
    if (why(s, op) !== null) return null;
    if (op.op !== 'submit') return s;
    const marker = (op.input as { marker: string }).marker;
    const id = op.output === null ? (s.head?.id ?? 0) + 1 : (op.output as { id: number }).id;
    return { size: s.size + 1, head: { marker, id, next: s.head }, hash: (s.hash + entryHash(marker, id)) >>> 0 };
  },
  hash: (s) => (s.hash ^ Math.imul(s.size, 0x27d4eb2d)) >>> 0,
  equal(a, b) {
    if (a.size !== b.size || a.hash !== b.hash) return false;
    let x = a.head;
    let y = b.head;
    while (x !== null && y !== null) {
      if (x === y) return true;
      if (x.marker !== y.marker || x.id !== y.id) return false;
      x = x.next;
      y = y.next;
    }
    return x === y;
  },
  explain: (s, op) => why(s, op) ?? 'it is legal here, but no order of the operations concurrent with it works',
  prepare(history) {
    const seenBy = new Map<string, { id: number; complete_ms: number }>();
    const note = (marker: string, id: number, complete_ms: number): void => {
      const cur = seenBy.get(marker);
      if (cur === undefined || complete_ms < cur.complete_ms) seenBy.set(marker, { id, complete_ms });
    };
    for (const o of history) {
      if (o.output === null || o.complete_ms === null) continue;
      if (o.op === 'list')
        for (const [m, id] of (o.output as { jobs: ReadonlyArray<readonly [string, number]> }).jobs)
          note(m, id, o.complete_ms);
      if (o.op === 'show') {
        const m = (o.output as { marker: string | null }).marker;
        if (m !== null) note(m, (o.input as { id: number }).id, o.complete_ms);
      }
    }
    const out: JobTableOp[] = [];
    for (const o of history) {
      if (o.complete_ms !== null) {
        out.push(o);
        continue;
      }
      if (o.op !== 'submit') continue; // a pending read: no output, no constraint
      const seen = seenBy.get((o.input as { marker: string }).marker);
      if (seen === undefined) continue; // never observed: as if it took effect after everything
      out.push({ ...o, output: { id: seen.id }, complete_ms: Math.max(o.invoke_ms, seen.complete_ms) });
    }
    return out;
  },
};
