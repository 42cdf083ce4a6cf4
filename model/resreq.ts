// LSF-style resource requirement strings: parse, format, and check against resources.yaml.
//
//   select[ib && mem>64000 && (a100 || h100)] rusage[license_foam=1, mem=4000:duration=30m]
//   span[ptile=16] same[model] order[-slots:maxmem]
//
// Grammar (sections in any order, each at most once, separated by blanks):
//   select[expr]       expr := or; or := and ('||' and)*; and := unary ('&&' unary)*;
//                      unary := '!' unary | '(' or ')' | NAME [op value]; op := > >= < <= == != (= means ==);
//                      value := number | NAME | "quoted string". The top-level && terms are the
//                      requirement's select terms (what the additive rule ANDs).
//   rusage[item, ...]  item := NAME '=' number [':duration=' duration]; items separated by ',' or ':'.
//                      The number is an amount in thousandths at most (amount.ts): 0.5, 1.25, not 0.0005.
//                      duration: 30m, 1h, 90s, 1h30m; a bare number is minutes (as in LSF).
//   span[ptile=N]      tasks per host; span[hosts=N] number of hosts (both may be given: ptile=4,hosts=2).
//   same[attr:...]     all hosts of the job share these attribute values.
//   order[[-|+]key:...] host ordering; '-' means descending.
// Compound / alternative requirements: `{simple} + {simple}` and `simple || simple` (or with braces).
// They parse (so the merge can refuse them by name) but carry no multipliers.
//
// Formatting is canonical: sections in the order select, rusage, span, same, order; `&&` / `||`
// with blanks around them; comparisons without blanks (`mem>64000`); the fewest parentheses.
//
// The parts, each a file of its own, re-exported here: resreq-scanner.ts (position, tokens, the
// syntax error), resreq-parse.ts (the whole requirement), resreq-select.ts, resreq-sections.ts
// (rusage, span, same, order), resreq-format.ts, resreq-check.ts (against resources.yaml).

export {
  BUILTIN_HOST_RESOURCES,
  checkResReqResources,
  type ResourceRef,
  type ResourceType,
  type ResReqReferenceProblem,
} from './resreq-check.js';
export {
  formatOrder,
  formatResReq,
  formatRusageItem,
  formatSame,
  formatSelectExpr,
  formatSelectTerms,
  formatSimpleResReq,
  formatSpan,
} from './resreq-format.js';
export { isEmptyResReq, parseResReq, parseSimpleResReq, RESREQ_CHARS_MAX } from './resreq-parse.js';
export { RESREQ_NESTING_MAX, ResReqSyntaxError } from './resreq-scanner.js';
