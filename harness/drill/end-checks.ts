// The end checks, on every controller read at one applied index (read-controllers.ts): every
// acknowledged submit exists exactly once, no job id twice, every reported dispatch record
// identical everywhere, every finished worker's status applied, the drill's jobs identical field
// for field, and every controller's state digest identical.

import type { Drill } from './drill-context.js';
import type { CheckOutcome, Details } from './drill-types.js';
import { canonical } from './history.js';
import { settleAndRead, type ControllerView, type Reading } from './read-controllers.js';

/** Records one check: ok when `problems` is empty (the first five are shown otherwise). */
type Add = (name: string, problems: string[], okDetail: string) => void;

export async function endChecks(d: Drill): Promise<CheckOutcome[]> {
  const out: CheckOutcome[] = [];
  const add: Add = (name, problems, okDetail) => {
    out.push({
      name,
      ok: problems.length === 0,
      detail: problems.length === 0 ? okDetail : `${problems.length} problem(s): ${problems.slice(0, 5).join('; ')}`,
    });
  };
  const r = await settleAndRead(d);
  const first = r.ids[0]!;
  const base = r.views.get(first)!;
  // 1. Every acknowledged submit exists exactly once; no job id given twice; no refused one exists.
  ackedOnce(d, base, add);
  idsUnique(d, base, add);
  // 2. Every dispatch record ever reported is byte-for-byte the same on every controller.
  dispatchRecords(d, r, add);
  // 3. Every job whose worker finished has its final status.
  if (d.t.noWorkerCheckReason !== null)
    out.push({
      name: 'every job whose worker finished has its final status',
      ok: true,
      skipped: true,
      detail: `not checked: ${d.t.noWorkerCheckReason}`,
    });
  else workerCheck(d, r, add);
  // 4. The controllers' states are identical once quiet.
  statesIdentical(r, add);
  // 5. The whole replicated state, not only the drill's jobs: every controller's state digest (the
  // SHA-256 of its snapshot encoding) at one applied index.
  digestsIdentical(r, add);
  return out;
}

function ackedOnce(d: Drill, base: ControllerView, add: Add): void {
  const byMarker = new Map<string, number[]>();
  for (const j of base.list) byMarker.set(j.name ?? '', [...(byMarker.get(j.name ?? '') ?? []), j.id]);
  const p1: string[] = [];
  for (const [m, id] of d.h.acked) {
    const got = byMarker.get(m) ?? [];
    if (got.length !== 1 || got[0] !== id) p1.push(`acknowledged ${m} (job ${id}) is present as [${got.join(', ')}]`);
  }
  for (const [m, got] of byMarker)
    if (got.length > 1) p1.push(`${m} exists ${got.length} times (jobs ${got.join(', ')})`);
  for (const m of d.h.refused)
    if (byMarker.has(m)) p1.push(`${m} was refused but exists as job ${byMarker.get(m)!.join(', ')}`);
  add(
    'every acknowledged submit exists exactly once',
    p1,
    `${d.h.acked.size} acknowledged, ${d.h.uncertain.size} uncertain (${[...d.h.uncertain].filter((m) => byMarker.has(m)).length} of them took effect), ${d.h.refused.size} refused`,
  );
}

function idsUnique(d: Drill, base: ControllerView, add: Add): void {
  const p2 = [...d.h.violations.filter((v) => v.includes('given to two'))];
  const idSet = new Set(base.list.map((j) => j.id));
  if (idSet.size !== base.list.length) p2.push(`${base.list.length - idSet.size} duplicate job ids in the job list`);
  add('no job id was given twice', p2, `${base.list.length} jobs, ids unique`);
}

function dispatchRecords(d: Drill, { ids, views }: Reading, add: Add): void {
  const first = ids[0];
  const p3: string[] = [...d.h.violations.filter((v) => v.includes('dispatch record'))];
  let compared = 0;
  let superseded = 0;
  for (const [key, seen] of d.h.records) {
    const [jobId, run] = key.split(':').map(Number) as [number, number];
    for (const id of ids) {
      const job = views.get(id)!.details.get(jobId);
      if (job === undefined) p3.push(`job ${jobId} (record seen for run ${run}) is missing on controller ${id}`);
      else if (job.runNumber !== run) {
        if (job.runNumber < run)
          p3.push(`controller ${id} has job ${jobId} on run ${job.runNumber}, but run ${run} was reported`);
        else if (id === first) superseded++;
      } else if (job.record === null) {
        // a requeue after the run cleared it; the run number stays until the next dispatch
        if (id === first) superseded++;
      } else if (canonical(job.record) !== seen.json)
        p3.push(
          `job ${jobId} run ${run}: controller ${id}'s dispatch record differs from the one reported at ${seen.seenAt_ms.toFixed(0)} ms`,
        );
      else if (id === first) compared++;
    }
  }
  add(
    'every reported dispatch record is identical on every controller',
    p3,
    `${compared} records compared on ${ids.length} controllers (${superseded} superseded by a requeue)`,
  );
}

function workerCheck(d: Drill, { ids, views }: Reading, add: Add): void {
  const first = ids[0];
  const p4: string[] = [];
  let finals = 0;
  for (const f of d.h.finished.values()) {
    for (const id of ids) {
      const job = views.get(id)!.details.get(f.jobId);
      if (job === undefined) {
        p4.push(`job ${f.jobId} finished on a worker but does not exist on controller ${id}`);
        continue;
      }
      if (job.runNumber > f.run || d.h.controlled.has(f.jobId)) continue; // re-run or controlled by the drill
      if (job.state !== 'DONE' && job.state !== 'EXIT')
        p4.push(
          `job ${f.jobId} run ${f.run} finished on its worker (${f.kind}) but is ${job.state} on controller ${id}`,
        );
      else if (f.kind === 'finished' && f.exitCode !== null && job.exitCode !== f.exitCode)
        p4.push(`job ${f.jobId}: worker exit code ${f.exitCode}, controller ${id} says ${job.exitCode}`);
      else if (id === first) finals++;
    }
  }
  add(
    'every job whose worker finished has its final status',
    p4,
    `${finals} finished runs checked on ${ids.length} controllers (${d.h.finished.size} reported by the workers)`,
  );
}

function statesIdentical({ ids, views, applied }: Reading, add: Add): void {
  const [first, ...rest] = ids;
  const base = views.get(first!)!;
  const p5: string[] = [];
  for (const id of rest) {
    const v = views.get(id)!;
    if (v.list.length !== base.list.length)
      p5.push(`controller ${id} has ${v.list.length} jobs, controller ${first} ${base.list.length}`);
    for (const [jid, job] of base.details) {
      const o = v.details.get(jid);
      if (o === undefined) p5.push(`job ${jid} is on controller ${first} but not on ${id}`);
      else if (strip(o) !== strip(job))
        p5.push(`job ${jid} differs between controllers ${first} and ${id} in ${fieldsDiffering(job, o)}`);
    }
  }
  add(
    "the controllers' states are identical once quiet",
    p5,
    `${base.list.length} jobs identical (every field of jobs.show but the leader-only pend reason) on ${ids.length} controllers at applied index ${applied}`,
  );
}

/** A job's details without the leader-only pend reason, canonical. */
function strip(job: Details): string {
  return canonical({ ...job, pendReason: undefined });
}

/** The fields (but the pend reason) two readings of a job differ in, with both values. */
function fieldsDiffering(x: Details, y: Details): string {
  const a = x as unknown as Record<string, unknown>;
  const b = y as unknown as Record<string, unknown>;
  const fields = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter(
    (k) => k !== 'pendReason' && canonical(a[k]) !== canonical(b[k]),
  );
  return fields.map((k) => `${k} (${canonical(a[k]).slice(0, 80)} vs ${canonical(b[k]).slice(0, 80)})`).join(', ');
}

function digestsIdentical({ ids, digests }: Reading, add: Add): void {
  const p6: string[] = [];
  const d0 = digests[0];
  for (const [k, h] of digests.entries()) {
    if (h === null || h.digest === undefined) p6.push(`controller ${ids[k]} gave no state digest`);
    else if (h.applied !== d0?.applied)
      p6.push(`controller ${ids[k]} is at applied index ${h.applied}, controller ${ids[0]} at ${d0?.applied}`);
    else if (h.digest !== d0.digest)
      p6.push(
        `controller ${ids[k]}'s state digest ${h.digest.slice(0, 16)}… (${h.jobs} jobs) differs from controller ${ids[0]}'s ${d0.digest?.slice(0, 16)}… (${d0.jobs} jobs) at applied index ${h.applied}`,
      );
  }
  add(
    "every controller's state digest is identical at one applied index",
    p6,
    `${digests.length} controllers at applied index ${d0?.applied ?? '?'}: digest ${d0?.digest?.slice(0, 16) ?? '?'}… over ${d0?.jobs ?? '?'} jobs`,
  );
}
