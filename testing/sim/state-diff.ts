// What differs between two encoded states that should be byte-identical: the first differing
// byte, then the states restored and compared field by field (indexes, configuration, jobs,
// sessions). Slow; only a failing check calls it, to make its report readable.

import { restore } from '../../statemachine/snapshot.js';
import { canonical, describe } from './sim-util.js';

/** What differs between two encoded states (restored for the report; slow, only on a failure). */
export function explainDifference(a: Uint8Array, b: Uint8Array): string {
  let at = 0;
  while (at < a.length && at < b.length && a[at] === b[at]) at++;
  const where = `${a.length} vs ${b.length} bytes, first difference at byte ${at}`;
  try {
    const x = restore(a);
    const y = restore(b);
    const diffs: string[] = [];
    for (const k of ['appliedIndex', 'logTimeMs', 'nextJobId'] as const)
      if (x[k] !== y[k]) diffs.push(`${k} ${x[k]} vs ${y[k]}`);
    if (canonical(x.config?.files ?? null) !== canonical(y.config?.files ?? null))
      diffs.push('configuration files differ');
    for (const [id, j] of x.jobs) {
      const k = y.jobs.get(id);
      if (k === undefined) {
        diffs.push(`job ${id} only in the first`);
        continue;
      }
      for (const f of Object.keys(j) as (keyof typeof j)[]) {
        const u = canonical(j[f]);
        const v = canonical(k[f]);
        if (u !== v) diffs.push(`job ${id}.${f}: ${u.slice(0, 120)} vs ${v.slice(0, 120)}`);
      }
    }
    for (const id of y.jobs.keys()) if (!x.jobs.has(id)) diffs.push(`job ${id} only in the second`);
    for (const [id, s] of x.sessions) {
      const t = y.sessions.get(id);
      if (t === undefined) diffs.push(`session ${id} only in the first`);
      else if (canonical(s) !== canonical(t))
        diffs.push(`session ${id}: ${canonical(s).slice(0, 160)} vs ${canonical(t).slice(0, 160)}`);
    }
    for (const id of y.sessions.keys()) if (!x.sessions.has(id)) diffs.push(`session ${id} only in the second`);
    if (diffs.length === 0) diffs.push('the same values, encoded differently (a non-canonical encoding)');
    return `${where}; ${diffs.slice(0, 8).join('; ')}${diffs.length > 8 ? ` (and ${diffs.length - 8} more)` : ''}`;
  } catch (e) {
    return `${where} (could not restore them to compare: ${describe(e)})`;
  }
}
