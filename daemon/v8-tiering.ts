// How soon V8 optimizes the controller's code. A controller is a long-lived server whose hot paths
// (a submit's parse, serve, Raft step, WAL record, apply, answer) each run once per request through
// dozens of functions. With V8's default interrupt budget (67,584 bytes of bytecode run before a
// function is considered for optimization, Node 20) they reach optimized code only after several
// thousand requests: a controller just started, or a follower just elected, served one client at
// 0.7 of its later rate for its first 5 s and reached full speed after about 10 s
// (benchmarks/README.md, "the controller's first seconds"). A smaller budget costs some compilation
// early, on V8's background compiler thread, once.
//
// The decision is pure (tieringFlags); daemon/v8-tiering-on-start.ts applies it, imported first by
// xcectld so that the flag is in force before any of the controller's code runs. A budget given on
// the node command line or in NODE_OPTIONS is left alone.

/** The interrupt budget xcectld runs with (V8 `--interrupt-budget`, in bytes of bytecode). */
export const CONTROLLER_INTERRUPT_BUDGET = 4096;

/** The V8 flag that sets the budget. */
const BUDGET_FLAG = '--interrupt-budget';

/** True when `args` (node's own flags, or NODE_OPTIONS split on spaces) already set the budget. */
function setsBudget(args: readonly string[]): boolean {
  return args.some(
    (a) =>
      a === BUDGET_FLAG ||
      a.startsWith(`${BUDGET_FLAG}=`) ||
      a === '--interrupt_budget' ||
      a.startsWith('--interrupt_budget='),
  );
}

/**
 * The V8 flags to set at start: the controller's interrupt budget, unless the node command line
 * (`execArgv`) or NODE_OPTIONS already gives one (an operator's choice wins).
 */
export function tieringFlags(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const fromOptions = (nodeOptions ?? '').split(/\s+/).filter((a) => a !== '');
  if (setsBudget(execArgv) || setsBudget(fromOptions)) return [];
  return [`${BUDGET_FLAG}=${CONTROLLER_INTERRUPT_BUDGET}`];
}
