// Checking a resource requirement against resources.yaml: every resource it names exists (there
// or among the built-ins every worker reports) and is of a kind that fits its use.

import type { ParsedResReq, SelectExpr } from './profile-types.js';
import type { SectionName } from './resreq-scanner.js';

const EMPTY: readonly never[] = Object.freeze([]);

export type ResourceType = 'boolean' | 'numeric' | 'string';

export interface ResourceRef {
  readonly type: ResourceType;
}

/**
 * Host facts every worker reports without a resources.yaml entry (LSF built-ins): usable in
 * select, same and order. `hname` and `type`/`model` are strings, the rest numeric.
 */
export const BUILTIN_HOST_RESOURCES: ReadonlyMap<string, ResourceRef> = new Map<string, ResourceRef>([
  ['hname', { type: 'string' }],
  ['type', { type: 'string' }],
  ['model', { type: 'string' }],
  ['slots', { type: 'numeric' }],
  ['ncpus', { type: 'numeric' }],
  ['maxmem', { type: 'numeric' }],
]);

export interface ResReqReferenceProblem {
  readonly section: SectionName;
  readonly name: string;
  readonly message: string;
}

type Lookup = (name: string) => ResourceRef | undefined;

function unknown(section: SectionName, name: string): ResReqReferenceProblem {
  return { section, name, message: `${section}[...] names resource "${name}", which is not defined in resources.yaml` };
}

/** One resource use: it must exist, and `misfit` says why its type does not fit the use (null when it does). */
function checkUse(
  section: SectionName,
  name: string,
  lookup: Lookup,
  problems: ResReqReferenceProblem[],
  misfit: (type: ResourceType) => string | null,
): void {
  const d = lookup(name);
  const message = d === undefined ? null : misfit(d.type);
  if (d === undefined) problems.push(unknown(section, name));
  else if (message !== null) problems.push({ section, name, message });
}

/** A select expression's problems, pushed onto `problems`: a bare term is a boolean, a comparison is not. */
function checkSelect(e: SelectExpr, lookup: Lookup, problems: ResReqReferenceProblem[]): void {
  switch (e.kind) {
    case 'bool':
      checkUse('select', e.name, lookup, problems, (type) =>
        type === 'boolean'
          ? null
          : `select[...] uses "${e.name}" alone, but it is a ${type} resource: compare it, e.g. ${e.name}>0`,
      );
      return;
    case 'cmp':
      checkUse('select', e.name, lookup, problems, (type) =>
        type !== 'boolean'
          ? null
          : `select[...] compares "${e.name}", but it is a boolean resource: write ${e.name} or !${e.name}`,
      );
      return;
    case 'not':
      checkSelect(e.expr, lookup, problems);
      return;
    case 'and':
    case 'or':
      for (const a of e.args) checkSelect(a, lookup, problems);
      return;
  }
}

/**
 * Every resource a requirement names must exist (in resources.yaml or among the built-ins), and be
 * of a kind that fits its use: a bare select term is a boolean, a consumption in rusage is numeric.
 * Returns the problems (empty when none), in the order they appear.
 */
export function checkResReqResources(
  r: ParsedResReq,
  resources: ReadonlyMap<string, ResourceRef>,
): ResReqReferenceProblem[] {
  const problems: ResReqReferenceProblem[] = [];
  const lookup: Lookup = (n) => resources.get(n) ?? BUILTIN_HOST_RESOURCES.get(n);
  const parts = r.kind === 'simple' ? [r] : r.parts;
  for (const p of parts) {
    for (const t of p.select) checkSelect(t, lookup, problems);
    for (const u of p.rusage)
      checkUse('rusage', u.name, lookup, problems, (type) =>
        type === 'numeric'
          ? null
          : `rusage[...] reserves "${u.name}", but only numeric resources can be reserved (it is ${type})`,
      );
    for (const n of p.same ?? EMPTY) if (lookup(n) === undefined) problems.push(unknown('same', n));
    for (const k of p.order ?? EMPTY) if (lookup(k.name) === undefined) problems.push(unknown('order', k.name));
  }
  return problems;
}
