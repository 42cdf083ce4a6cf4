// The one text form of a configuration diagnostic (config-types.ts `Diagnostic`), compiler style so
// that editors can jump to it: `applications.yaml:14:15: error: openfoam: limits.runtime: bad
// duration ...`. Used by `xceadmin config build`, xcectld's start-up check and wherever else a
// loaded configuration is refused. Pure.

import type { Diagnostic } from './config-types.js';

/** `file[:line:column]: severity: [entry: ][field: ]message`. */
export function formatDiagnostic(d: Diagnostic): string {
  const where = d.line !== undefined ? `${d.file}:${d.line}:${d.column ?? 1}` : d.file;
  const subject = [d.entry, d.field].filter((x) => x !== undefined).join(': ');
  return `${where}: ${d.severity}: ${subject === '' ? '' : `${subject}: `}${d.message}`;
}
