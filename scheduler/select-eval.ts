// `select[...]` evaluated against the hosts of one pass. Each distinct expression is compiled once
// per pass into a predicate over host indices (closures over the view's typed arrays, no lookups by
// name on the hot path), and the set of available hosts that satisfy a job's whole select is kept
// per distinct select text: 100,000 pending jobs under a few profiles evaluate 1,000 hosts a few
// times, not 100,000 times.
//
// What a name means in select (LSF semantics, with this project's units):
//   boolean resource (`ib`)   the host has it. A numeric used alone (`gpu`) means "> 0"; a string
//                             alone means "the host has a value".
//   numeric resource (`mem`)  what is FREE on the host when the pass began: hosts.yaml capacity
//                             minus what running jobs (and in-flight dispatches) hold, in the
//                             resource's unit (`mem`: MB). Like LSF's load indices, select sees the
//                             values of the start of the scheduling session; reservations made during
//                             the pass are enforced by rusage, not select.
//   `slots`                   free slots when the pass began; `ncpus`: configured slots;
//                             `maxmem`: configured memory in MB.
//   cluster pool (`license_foam`) free in the pool when the pass began (the same for every host).
//   string (`rack`, `model`, `hname`, `type`) compared as text (`==`, `!=`; `<` `>` by code units).
// A comparison on a value the host does not have is false (`!` of it is true).

import type { SelectExpr } from '../model/profile-types.js';
import { formatSelectExpr, formatSelectTerms } from '../model/resreq.js';
import type { ClusterPools, HostView } from './host-view.js';

/** Is host `i` selected? */
export type HostPredicate = (i: number) => boolean;

const NEVER: HostPredicate = () => false;
const ALWAYS: HostPredicate = () => true;

/** The available hosts that satisfy one whole select (all terms ANDed). */
export interface SelectedHosts {
  /** Canonical select text (`ib && mem>64000`), '' when the job selects nothing. */
  readonly text: string;
  /** Host indices, ascending (name order). */
  readonly hosts: Int32Array;
}

/** Compiles and caches select expressions and their host sets for one HostView (one pass). */
export class SelectEvaluator {
  private readonly predicates = new Map<string, HostPredicate>();
  private readonly selected = new Map<string, SelectedHosts>();

  constructor(
    private readonly view: HostView,
    private readonly pools: ClusterPools,
  ) {}

  /** The compiled predicate of one expression (cached by its canonical text). */
  predicate(e: SelectExpr): HostPredicate {
    const key = formatSelectExpr(e);
    let p = this.predicates.get(key);
    if (p === undefined) {
      p = this.compile(e);
      this.predicates.set(key, p);
    }
    return p;
  }

  /** The available hosts satisfying all `terms`, cached by the canonical text of the terms. */
  hostsFor(
    terms: readonly SelectExpr[],
    text: string = terms.length === 0 ? '' : formatSelectTerms(terms),
  ): SelectedHosts {
    let s = this.selected.get(text);
    if (s !== undefined) return s;
    const preds = terms.map((t) => this.predicate(t));
    const v = this.view;
    const out = new Int32Array(v.availableCount);
    let n = 0;
    outer: for (let i = 0; i < v.count; i++) {
      if (v.available[i] !== 1) continue;
      for (const p of preds) if (!p(i)) continue outer;
      out[n++] = i;
    }
    s = { text, hosts: out.subarray(0, n) };
    this.selected.set(text, s);
    return s;
  }

  private compile(e: SelectExpr): HostPredicate {
    switch (e.kind) {
      case 'bool':
        return this.compileBool(e.name);
      case 'cmp':
        return this.compileCmp(e.name, e.op, e.value);
      case 'not': {
        const p = this.predicate(e.expr);
        return (i) => !p(i);
      }
      case 'and': {
        const ps = e.args.map((a) => this.predicate(a));
        if (ps.length === 2) {
          const [a, b] = ps as [HostPredicate, HostPredicate];
          return (i) => a(i) && b(i);
        }
        return (i) => {
          for (const p of ps) if (!p(i)) return false;
          return true;
        };
      }
      case 'or': {
        const ps = e.args.map((a) => this.predicate(a));
        if (ps.length === 2) {
          const [a, b] = ps as [HostPredicate, HostPredicate];
          return (i) => a(i) || b(i);
        }
        return (i) => {
          for (const p of ps) if (p(i)) return true;
          return false;
        };
      }
    }
  }

  private compileBool(name: string): HostPredicate {
    const b = this.view.booleanOf(name);
    if (b !== undefined) return (i) => b[i] === 1;
    const s = this.view.stringOf(name);
    if (s !== undefined) return (i) => s[i] !== undefined && s[i] !== '';
    const num = this.numeric(name);
    if (num !== undefined) return (i) => (num[i] as number) > 0;
    const pool = this.pools.startFree(name);
    if (pool !== undefined) return pool > 0 ? ALWAYS : NEVER;
    return NEVER;
  }

  /** Numeric values per host as select sees them (start of the pass), NaN where the host has none. */
  private numeric(name: string): Float64Array | undefined {
    const v = this.view;
    switch (name) {
      case 'slots':
        return v.slotsStartFree;
      case 'ncpus':
        return v.slotsCap;
      case 'maxmem':
        return v.maxmemMb;
    }
    return v.declaredResource(name)?.startFree;
  }

  private compileCmp(name: string, op: string, value: number | string): HostPredicate {
    const s = this.view.stringOf(name);
    if (s !== undefined) return compileStringCmp(s, op, String(value));
    const num = this.numeric(name);
    if (num !== undefined) return typeof value === 'number' ? compileNumberCmp(num, op, value) : NEVER;
    const pool = this.pools.startFree(name);
    if (pool !== undefined) return typeof value === 'number' && numberCmp(pool, op, value) ? ALWAYS : NEVER;
    // A boolean compared (`ib==1`, refused by config checks) or an unknown name: no host has a value.
    const b = this.view.booleanOf(name);
    if (b !== undefined && typeof value === 'number') {
      const ones = new Float64Array(b.length);
      for (let i = 0; i < b.length; i++) ones[i] = b[i] as number;
      return compileNumberCmp(ones, op, value);
    }
    return NEVER;
  }
}

function numberCmp(x: number, op: string, v: number): boolean {
  switch (op) {
    case '>':
      return x > v;
    case '>=':
      return x >= v;
    case '<':
      return x < v;
    case '<=':
      return x <= v;
    case '==':
      return x === v;
    case '!=':
      return x === x && x !== v;
  }
  return false;
}

// One closure per operator so the hot loop has no switch. NaN (no value) fails every comparison;
// `!=` checks for it explicitly because NaN !== v is true.
function compileNumberCmp(a: Float64Array, op: string, v: number): HostPredicate {
  switch (op) {
    case '>':
      return (i) => (a[i] as number) > v;
    case '>=':
      return (i) => (a[i] as number) >= v;
    case '<':
      return (i) => (a[i] as number) < v;
    case '<=':
      return (i) => (a[i] as number) <= v;
    case '==':
      return (i) => a[i] === v;
    case '!=':
      return (i) => {
        const x = a[i] as number;
        return x === x && x !== v;
      };
  }
  return NEVER;
}

function compileStringCmp(a: readonly (string | undefined)[], op: string, v: string): HostPredicate {
  switch (op) {
    case '==':
      return (i) => a[i] === v;
    case '!=':
      return (i) => a[i] !== undefined && a[i] !== v;
    case '>':
      return (i) => a[i] !== undefined && (a[i] as string) > v;
    case '>=':
      return (i) => a[i] !== undefined && (a[i] as string) >= v;
    case '<':
      return (i) => a[i] !== undefined && (a[i] as string) < v;
    case '<=':
      return (i) => a[i] !== undefined && (a[i] as string) <= v;
  }
  return NEVER;
}
