// The codec of an apply result (ApplyResult) as a snapshot's Session holds it: the answer a
// retried (client, sequence) gets again after a restore.

import type { Reader, Writer } from '../wire/capnp-wire.js';
import { enumAt } from './codec-shared.js';
import type { ApplyResult, DeclineCode, NameCount, RejectCode } from './facts.js';
import { RESULT_KINDS } from './facts.js';
import { readTextListOrEmpty, writeTextList } from './shared-values-codec.js';

/** ApplyResult: 2 data words, 4 pointers. */
export function writeResult(w: Writer, ptr: number, r: ApplyResult): void {
  // apply never records a batch's result in a session (a batch has no client): a caller's bug.
  if (r.kind === 'batch') throw new Error('a batch fact has no client session, so no result of one is kept');
  const d = w.struct(ptr, 2, 4);
  const p = d + 16;
  w.u16(d, RESULT_KINDS.indexOf(r.kind));
  switch (r.kind) {
    case 'noop':
    case 'hostRegistered':
    case 'hostControlled':
    case 'credentialApplied':
      return;
    case 'submitted':
    case 'statusApplied':
    case 'controlled':
    case 'modified':
      w.u64(d + 8, r.jobId);
      return;
    case 'cleaned':
      w.u64(d + 8, r.count);
      return;
    case 'rejected':
      w.text(p, r.code);
      w.text(p + 8, r.message);
      return;
    case 'declined':
      w.u64(d + 8, r.jobId);
      w.text(p, r.code);
      w.text(p + 8, r.message);
      return;
    case 'ignored':
      w.u64(d + 8, r.jobId);
      w.text(p + 8, r.message);
      return;
    case 'dispatched':
      w.u64(d + 8, r.jobId);
      w.u32(d + 4, r.runNumber);
      return;
    case 'configApplied': {
      let at = w.structList(p + 16, r.inUse.length, 1, 1); // NameCount: name p0, isAlias b0, pendingJobs d4
      for (const n of r.inUse) {
        w.bool(at, 0, n.isAlias);
        w.u32(at + 4, n.pendingJobs);
        w.text(at + 8, n.name);
        at += 16;
      }
      writeTextList(w, p + 24, r.warnings);
      return;
    }
  }
}

export function readResult(r: Reader, ptr: number): ApplyResult {
  const s = ptr < 0 ? null : r.struct(ptr);
  if (s === null) return { kind: 'noop' };
  const kind = enumAt(RESULT_KINDS, r.u16(s, 0), 'result kind', s.data);
  const jobId = r.u64(s, 8);
  switch (kind) {
    case 'noop':
    case 'hostRegistered':
    case 'hostControlled':
    case 'credentialApplied':
      return { kind };
    case 'submitted':
    case 'statusApplied':
    case 'controlled':
    case 'modified':
      return { kind, jobId };
    case 'cleaned':
      return { kind, count: jobId };
    case 'rejected':
      return { kind, code: (r.text(s, 0) ?? '') as RejectCode, message: r.text(s, 1) ?? '' };
    case 'declined':
      return { kind, jobId, code: (r.text(s, 0) ?? '') as DeclineCode, message: r.text(s, 1) ?? '' };
    case 'ignored':
      return { kind, jobId, message: r.text(s, 1) ?? '' };
    case 'dispatched':
      return { kind, jobId, runNumber: r.u32(s, 4) };
    case 'configApplied': {
      const inUse: NameCount[] = [];
      const l = s.ptrCount > 2 ? r.list(r.ptr(s, 2)) : null;
      if (l !== null) {
        for (let i = 0; i < l.count; i++) {
          const e = r.elem(l, i);
          inUse.push({ name: r.text(e, 0) ?? '', isAlias: r.bool(e, 0), pendingJobs: r.u32(e, 4) });
        }
      }
      return { kind, inUse, warnings: readTextListOrEmpty(r, r.ptr(s, 3)) };
    }
  }
}
