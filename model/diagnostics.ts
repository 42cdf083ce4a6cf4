// The one text form of a configuration diagnostic (config-types.ts `Diagnostic`), compiler style so
// that editors can jump to it: `applications.yaml:14:15: error: openfoam: limits.runtime: bad
// duration ...`. Used by `xceadmin config build`, xcectld's start-up check and wherever else a
// loaded configuration is refused; and its short form without position or severity, the text a
// refused or warned ConfigFact replicates in its result (statemachine/apply-config.ts). Pure.

import type { Diagnostic } from './config-types.js';

/** `file[:line:column]: severity: [entry: ][field: ]message`. */
export function formatDiagnostic(d: Diagnostic): string {
  const where = d.line !== undefined ? `${d.file}:${d.line}:${d.column ?? 1}` : d.file;
  const subject = [d.entry, d.field].filter((x) => x !== undefined).join(': ');
  return `${where}: ${d.severity}: ${subject === '' ? '' : `${subject}: `}${d.message}`;
}

/** `file[ entry][ field]: message`: the replicated form (no line or column: the text is part of the state). */
export function formatDiagnosticShort(d: Diagnostic): string {
  return `${d.file}${d.entry !== undefined ? ` ${d.entry}` : ''}${d.field !== undefined ? ` ${d.field}` : ''}: ${d.message}`;
}
