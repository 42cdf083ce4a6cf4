// Human-readable renderings of API results for xcecli and xceadmin (`--json` prints them raw).
// Every value from the cluster goes through `str` / `txt` (output.ts `printable`): another user's
// job name or a job's output quoted in a reason must not drive the reader's terminal.

import { formatSize } from '../model/units.js';
import { bold, printable, table } from './output.js';

type Obj = Record<string, unknown>;

/** A value from the cluster, printable; `-` when absent. */
const str = (v: unknown): string => (v === null || v === undefined ? '-' : printable(String(v)));
/** A value from the cluster, printable. */
const txt = (v: unknown): string => printable(String(v));
/** A list of values from the cluster, each printable, joined. */
const list = (v: unknown, sep: string): string => ((v as unknown[]) ?? []).map(txt).join(sep);

function time(ms: unknown): string {
  return typeof ms === 'number' && ms > 0 ? new Date(ms).toISOString().replace('T', ' ').slice(0, 19) : '-';
}

export function renderJobList(r: Obj, color: boolean): string {
  const jobs = (r['jobs'] as Obj[]) ?? [];
  const footer = jobListFooter(jobs.length, r['total'], r['next']);
  if (jobs.length === 0) return footer === '' ? 'No jobs.\n' : footer;
  return (
    table(
      ['JOBID', 'USER', 'STATE', 'QUEUE', 'APP', 'HOSTS', 'SUBMITTED', 'COMMAND / REASON'],
      jobs.map((j) => [
        str(j['label'] ?? j['id']),
        str(j['user']),
        str(j['state']),
        str(j['queue']),
        str(j['app']),
        str(j['hosts'] || '-'),
        time(j['submitTimeMs']),
        j['array']
          ? `${str(j['name'])}[${arrayCounts(j['array'] as Obj)}]  ${str(j['command'])}`
          : j['state'] === 'PEND' && j['pendReason']
            ? `${str(j['command'])}  (${str(j['pendReason'])})`
            : j['reason']
              ? `${str(j['command'])}  (${str(j['reason'])})`
              : str(j['command']),
      ]),
      color,
    ) + footer
  );
}

const count = (n: number): string => n.toLocaleString('en-US');

/** A folded array's counts: `1000: 20 RUN, 930 PEND, 50 DONE, %20`. */
function arrayCounts(a: Obj): string {
  const c = (a['counts'] as Record<string, number>) ?? {};
  const parts = ['RUN', 'SUSP', 'PEND', 'DONE', 'EXIT']
    .filter((s) => (c[s] ?? 0) > 0)
    .map((s) => `${count(c[s]!)} ${s}`);
  const limit = typeof a['limit'] === 'number' && a['limit'] > 0 ? `, %${a['limit']}` : '';
  return `${count(Number(a['size']))}: ${parts.join(', ')}${limit}`;
}

/** `1,000 of 1,041 jobs shown; --after 42 for more`; empty when the page shows every job. */
export function jobListFooter(shown: number, total: unknown, next: unknown): string {
  if (typeof total !== 'number' || (shown >= total && typeof next !== 'number')) return '';
  const more = typeof next === 'number' ? `; --after ${next} for more` : '';
  return `${count(shown)} of ${count(total)} jobs shown${more}\n`;
}

/** `xcecli hosts`: one row per host, then each disagreement with hosts.yaml. */
export function renderHostList(r: Obj, color: boolean): string {
  const hosts = (r['hosts'] as Obj[]) ?? [];
  if (hosts.length === 0) return 'No hosts in hosts.yaml.\n';
  const rows = hosts.map((h) => {
    const c = (h['configured'] as Obj) ?? {};
    const reg = h['registered'] as Obj | null;
    const closed = h['closed'] as Obj | null | undefined;
    return [
      str(h['name']),
      closed ? `closed${h['status'] === 'unavail' ? ',unavail' : ''}` : str(h['status']),
      str(h['slots']),
      str(h['slotsUsed']),
      `${str(c['slots'])}`,
      reg === null ? 'never' : str(reg['slots']),
      size(h['mem_bytes']),
    ];
  });
  const reasons = hosts.flatMap((h) => ((h['mismatches'] as unknown[]) ?? []).map((m) => `${txt(m)}\n`));
  const closed = hosts.flatMap((h) => {
    const c = h['closed'] as Obj | null | undefined;
    if (!c) return [];
    const reason = c['reason'] === null ? '' : `: ${txt(c['reason'])}`;
    return [`${txt(h['name'])}: closed by ${txt(c['user'])}${reason} (since ${iso(c['timeMs'])})\n`];
  });
  const from =
    hosts.some((h) => h['status'] === null) && typeof r['statusFrom'] === 'number'
      ? `(STATUS is known to the leader, node ${str(r['statusFrom'])})\n`
      : '';
  return (
    table(['HOST', 'STATUS', 'SLOTS', 'USED', 'HOSTS.YAML', 'REGISTERED', 'MEM'], rows, color) +
    from +
    (closed.length > 0 ? `\nClosed hosts (no new jobs; xceadmin hosts open NAME):\n${closed.join('')}` : '') +
    (reasons.length > 0 ? `\nRegistered resources that differ from hosts.yaml:\n${reasons.join('')}` : '')
  );
}

/** A time in ms since the epoch as an ISO date-time to the second, UTC. */
const iso = (v: unknown): string => (typeof v === 'number' ? new Date(v).toISOString().slice(0, 19) + 'Z' : '-');

/** `xcecli queues` (like bqueues). */
export function renderQueueList(r: Obj, color: boolean): string {
  const queues = (r['queues'] as Obj[]) ?? [];
  if (queues.length === 0) return 'No queues in queues.yaml.\n';
  const rows = queues.map((q) => [
    str(q['name']),
    str(q['priority']),
    str(q['pending']),
    str(q['running']),
    str(q['slotsUsed']),
    q['canSubmit'] === true ? 'yes' : 'no',
    txt(q['description'] ?? '-'),
  ]);
  const notes = queues.flatMap((q) =>
    ((q['deprecations'] as unknown[]) ?? []).map((d) => `${txt(q['name'])}: ${txt(d)}\n`),
  );
  return (
    table(['QUEUE', 'PRIO', 'PEND', 'RUN', 'SLOTS', 'SUBMIT', 'DESCRIPTION'], rows, color) +
    (notes.length > 0 ? `\nDeprecated queue settings:\n${notes.join('')}` : '')
  );
}

/** `xcecli queues show NAME`. */
export function renderQueue(q: Obj): string {
  const deps = (q['deprecations'] as unknown[]) ?? [];
  return (
    [
      `Queue        ${txt(q['name'])}`,
      `Description  ${txt(q['description'] ?? '-')}`,
      `Priority     ${str(q['priority'])}   (higher is considered first)`,
      `Jobs         ${str(q['pending'])} pending, ${str(q['running'])} running, ${str(q['done'])} done, ${str(q['exited'])} exited (still in the controllers' state)`,
      `Slots used   ${str(q['slotsUsed'])}`,
      `You submit   ${q['canSubmit'] === true ? 'yes' : 'no (no queue:submit on this queue)'}`,
      `Limits       none (what a job may use comes from its application profile and its own -l)`,
      ...(deps.length === 0 ? [] : ['Deprecated', ...deps.map((d) => `  ${txt(d)}`)]),
    ].join('\n') + '\n'
  );
}

/** Bytes as users write them (`256G`). */
const size = (v: unknown): string => (typeof v === 'number' ? formatSize(v) : '-');

function terms(list: unknown): string[] {
  return ((list as Obj[]) ?? []).map((t) => `  ${txt(t['text']).padEnd(34)} ${str(t['origin'])}`);
}

function envLines(list: unknown): string[] {
  return ((list as Obj[]) ?? []).map((e) => {
    const v = typeof e['value'] === 'object' && e['value'] !== null ? (e['value'] as Obj) : e;
    return `  ${txt(v['name'])}=${txt(v['value'])}`.padEnd(36) + ` ${str(e['origin'])}`;
  });
}

/** `Job array` and `Dependency` lines of `jobs show`: an array's counts or an element's place, the dependency. */
function arrayAndDependencyLines(j: Obj): string[] {
  const out: string[] = [];
  const arr = j['array'] as Obj | null | undefined;
  if (arr)
    out.push(
      arr['index'] === null
        ? `Job array    ${str(arr['name'])} [${arrayCounts(arr)}]`
        : `Job array    element ${str(arr['index'])} of ${str(arr['id'])} (${str(arr['name'])}, ${count(Number(arr['size']))} elements${Number(arr['limit']) > 0 ? `, %${str(arr['limit'])}` : ''})`,
    );
  const dep = j['dependency'] as Obj | null | undefined;
  if (dep)
    out.push(
      `Dependency   ${str(dep['text'])}${dep['resolved'] !== dep['text'] ? `   (as ${str(dep['resolved'])})` : ''}   when never met: ${str(dep['onNever'])}`,
    );
  return out;
}

export function renderJobDetails(j: Obj, color: boolean): string {
  const p = (j['profile'] as Obj) ?? {};
  const out: string[] = [];
  out.push(
    bold(`Job ${str(j['label'] ?? j['id'])}  ${str(j['state'])}`, color) +
      `   user ${str(j['user'])}   queue ${str(j['queue'])}${j['name'] ? `   name ${str(j['name'])}` : ''}`,
  );
  out.push(`Command      ${list(j['command'], ' ')}`);
  // With no app:view on another user's job's profile, its values are left out and the answer says so.
  out.push(
    `Profile      ${str(p['display'])}${p['label'] ? `   ${str(p['label'])}` : ''}${j['profileValuesHidden'] ? `   (${str(j['profileValuesHidden'])})` : ''}`,
  );
  out.push(`Mode         ${str(j['mode'])}   launch type ${str(j['launchType'])}   tasks ${str(j['tasks'])}`);
  out.push(...arrayAndDependencyLines(j));
  if (j['pendReason']) out.push(`Pend reason  ${str(j['pendReason'])}`);
  const rr = terms(j['resreq']);
  if (rr.length > 0)
    out.push(
      j['record'] ? 'Resource requirement (frozen at dispatch)   origin' : 'Resource requirement (live merge)   origin',
      ...rr,
    );
  const env = envLines(j['env']);
  if (env.length > 0) out.push('Environment', ...env);
  const rec = j['record'] as Obj | null;
  if (rec) {
    out.push(
      bold('Dispatch record', color) +
        `   ${str(j['recordLabel'])}${j['profileChangedSinceDispatch'] ? '   (profile changed since dispatch)' : ''}`,
    );
    out.push(
      `  hosts          ${((rec['hosts'] as Obj[]) ?? []).map((h) => `${str(h['host'])}:${str(h['tasks'])}`).join(', ')}`,
    );
    const limits = (rec['limits'] as Obj) ?? {};
    const ls = Object.entries(limits).map(
      ([k, v]) => `${txt(k)}=${str((v as Obj)['value'])} (${str((v as Obj)['origin'])})`,
    );
    if (ls.length > 0) out.push(`  limits         ${ls.join(', ')}`);
    for (const k of ['profilePreExec', 'jobPreExec', 'jobPostExec', 'profilePostExec'])
      if (rec[k]) out.push(`  ${k.padEnd(15)}${str(rec[k])}`);
  }
  out.push(`Runs         ${str(j['runNumber'])} (requeued ${str(j['requeueCount'])} times)`);
  out.push(
    `Submitted    ${time(j['submitTimeMs'])}   dispatched ${time(j['dispatchTimeMs'])}   started ${time(j['startTimeMs'])}   ended ${time(j['endTimeMs'])}`,
  );
  if (j['state'] === 'DONE' || j['state'] === 'EXIT')
    out.push(
      `Exit         code ${str(j['exitCode'])}${j['signal'] ? `   signal ${str(j['signal'])}` : ''}${j['reason'] ? `   ${str(j['reason'])}` : ''}`,
    );
  if (j['heldBy']) out.push(`Held         by user ${str(j['heldBy'])}`);
  const mods = (j['modifications'] as Obj[] | undefined) ?? [];
  if (mods.length > 0)
    out.push('Modifications', ...mods.map((m) => `  ${time(m['timeMs'])}  by ${str(m['user'])}: ${str(m['changes'])}`));
  const events = ((j['events'] as Obj[] | undefined) ?? []).filter((e) => e['action'] !== 'modify');
  if (events.length > 0)
    out.push(
      'Control',
      ...events.map(
        (e) =>
          `  ${time(e['timeMs'])}  ${str(e['action'])}${e['user'] ? ` by ${str(e['user'])}` : ''}${e['detail'] ? `: ${str(e['detail'])}` : ''}`,
      ),
    );
  return out.join('\n') + '\n';
}

/** `Job <7> is submitted to queue <normal> with application profile <python>.` */
export function renderSubmitted(r: Obj): string {
  if (typeof r['arraySize'] === 'number')
    return `Job array <${str(r['jobId'])}> of ${count(r['arraySize'])} elements is submitted to queue <${str(r['queue'])}> with application profile <${str(r['profile'])}>.\n`;
  return `Job <${str(r['jobId'])}> is submitted to queue <${str(r['queue'])}> with application profile <${str(r['profile'])}>.\n`;
}

/** One line of `jobs watch`: the time, the job's state and its pend reason, or at the end its exit. */
export function renderWatchLine(id: number, d: Obj, clock: string, final: boolean): string {
  if (!final) return `${clock}  job ${id} ${str(d['state'])}${d['pendReason'] ? `  (${str(d['pendReason'])})` : ''}\n`;
  return `${clock}  job ${id} ${str(d['state'])}${d['reason'] ? `  (${str(d['reason'])})` : ''}  exit code ${str(d['exitCode'])}\n`;
}

export function renderDryRun(r: Obj): string {
  const out = [
    `Dry run: nothing was submitted.`,
    `Profile      ${str(r['profile'])}   ${str(r['profileLabel'])}${r['recordedAs'] !== r['profile'] ? `   (recorded as ${str(r['recordedAs'])})` : ''}`,
  ];
  out.push(`Queue        ${str(r['queue'])}`);
  out.push(`Mode         ${str(r['mode'])}   launch type ${str(r['launchType'])}   tasks ${str(r['tasks'])}`);
  const rr = terms(r['resreq']);
  if (rr.length > 0) out.push('Resource requirement                 origin', ...rr);
  const env = envLines(r['env']);
  if (env.length > 0) out.push('Environment', ...env);
  const limits = ((r['limits'] as Obj[]) ?? []).map(
    (l) => `  ${`${str(l['name'])}=${str(l['value'])}`.padEnd(34)} ${str(l['origin'])}`,
  );
  if (limits.length > 0) out.push('Limits', ...limits);
  for (const k of ['profilePreExec', 'jobPreExec', 'jobPostExec', 'profilePostExec'])
    if (r[k]) out.push(`${k.padEnd(16)}${str(r[k])}`);
  return out.join('\n') + '\n';
}

export function renderAppList(r: Obj, color: boolean): string {
  const apps = (r['apps'] as Obj[]) ?? [];
  return table(
    ['NAME', 'VERSION', 'MODE', 'LAUNCH', 'ALIASES', 'USABLE', 'DESCRIPTION'],
    apps.map((a) => [
      `${str(a['name'])}${a['isDefault'] ? ' (default)' : ''}`,
      str(a['label']),
      str(a['mode']),
      str(a['launchType']),
      list(a['aliases'], ',') || '-',
      a['usable'] ? 'yes' : 'no',
      str(a['description']),
    ]),
    color,
  );
}

export function renderApp(a: Obj, color: boolean): string {
  const out = [
    bold(`${str(a['name'])}   ${str(a['label'])}`, color) +
      (a['recordedAs'] !== a['name'] ? `   (you asked for ${str(a['recordedAs'])})` : ''),
  ];
  if (a['description']) out.push(`  ${str(a['description'])}`);
  out.push(
    `Mode           ${str(a['mode'])}   launch type ${str(a['launchType'])}${a['isDefault'] ? '   cluster default' : ''}`,
  );
  const aliases = (a['aliases'] as string[]) ?? [];
  if (aliases.length > 0) out.push(`Aliases        ${list(aliases, ', ')}`);
  const rr = (a['resreq'] as string[]) ?? [];
  out.push(`Requires       ${rr.length > 0 ? list(rr, ' ') : '(nothing)'}`);
  const t = a['tasks'] as Obj | null;
  out.push(`Tasks          ${t ? `${str(t['min'])}-${str(t['max'])}` : 'any'}`);
  const limits = ((a['limits'] as Obj[]) ?? []).map(
    (l) => `${str(l['name']).replace(/_(s|bytes)$/, '')} ≤ ${str(l['max'])}`,
  );
  out.push(`Limits (max)   ${limits.length > 0 ? limits.join(', ') : '(none)'}`);
  const env = ((a['env'] as Obj[]) ?? []).map((e) => `${str(e['name'])}=${str(e['value'])}`);
  if (env.length > 0) out.push(`Environment    ${env.join(' ')}`);
  if (a['preExec']) out.push(`Pre-exec       ${str(a['preExec'])}`);
  if (a['postExec']) out.push(`Post-exec      ${str(a['postExec'])}`);
  out.push(`Job pre/post   ${str(a['jobPrePostExec'])}`);
  out.push(`You may use it ${a['usable'] ? 'yes' : 'no (app:use not granted)'}`);
  return out.join('\n') + '\n';
}

export function renderClusterStatus(s: Obj, color: boolean): string {
  const members = (s['members'] as Obj[]) ?? [];
  const jobs = (s['jobs'] as Obj) ?? {};
  const head = `Leader ${str(s['leader'])} (${str(s['leaderAddress'])})   term ${str(s['term'])}   commit ${str(s['commit'])}   applied ${str(s['applied'])}   snapshot ${str(s['snapshotIndex'])}   answered by node ${str(s['node'])}\n`;
  const rows = members.map((m) => [
    str(m['id']),
    str(m['address']),
    str(m['role']),
    m['leader'] ? 'leader' : '',
    str(m['match']),
    str(m['lag']),
    m['connected'] ? 'yes' : 'no',
  ]);
  const jobLine = `Jobs: ${Object.entries(jobs)
    .map(([k, v]) => `${txt(k)} ${str(v)}`)
    .join('   ')}\n`;
  const mismatches = ((s['hostMismatches'] as unknown[]) ?? []).map((m) => `  ${txt(m)}\n`);
  const hostLines =
    mismatches.length > 0 ? `Hosts registering other resources than hosts.yaml allows:\n${mismatches.join('')}` : '';
  return head + table(['ID', 'ADDRESS', 'ROLE', '', 'MATCH', 'LAG', 'CONNECTED'], rows, color) + jobLine + hostLines;
}
