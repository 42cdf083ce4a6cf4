// The profile content hash: an internal version of each profile, computed, never stored as state
// (brief, "Profile content hash"). SHA-256 of the canonical Cap'n Proto encoding of the profile as an
// `AppProfile` (schema/profile.capnp), with `description` excluded and empty Text / empty lists
// normalised to unset, so the same profile gives the same hash on every process, after a restart,
// whatever the YAML's key order or formatting. Shown short as `openfoam@3f2a9c`.
//
// Struct layouts below are the ones `capnp compile -ocapnp schema/profile.capnp` prints; the tests
// check the bytes against `capnp convert text:canonical` and against committed fixtures.

import { createHash } from 'node:crypto';
import {
  canonicalMessage,
  cdata,
  ctext,
  ctextKeepEmpty,
  setBool,
  setF64,
  setU16,
  setU32,
  setU64,
  type CNode,
  type CStruct,
  type CStructList,
} from '../wire/capnp-canonical.js';
import type { Probe, ServiceSpec } from './config-types.js';
import type { CmpOp, Limits, Profile, ResReq, SelectExpr } from './profile-types.js';

/** Characters of the hash shown in labels (`openfoam@3f2a9c`). */
export const SHORT_HASH_CHARS = 6;

const LAUNCH_TYPE = { serial: 1, openmpi: 2, mpich: 3 } as const;
const CMP_OP: Record<CmpOp, number> = { '>': 0, '>=': 1, '<': 2, '<=': 3, '==': 4, '!=': 5 };
const RESTART_POLICY = { 'on-failure': 0, always: 1, never: 2 } as const;

function struct(dataWords: number, ptrs: ReadonlyArray<CNode | null>, fill?: (v: DataView) => void): CStruct {
  const d = cdata(dataWords);
  if (fill !== undefined) fill(d.view);
  return { t: 'struct', data: d.bytes, ptrs };
}

function list<T>(items: readonly T[], f: (x: T) => CStruct): CStructList | null {
  return items.length === 0 ? null : { t: 'structlist', items: items.map(f) };
}

function textList(items: readonly string[]): CNode | null {
  return items.length === 0 ? null : { t: 'ptrlist', items: items.map(ctext) };
}

// struct SelectExpr { 8 bytes, 1 ptr; union tag bits [0,16): bool 0, cmp 1, not 2, and 3, or 4 }
function selectNode(e: SelectExpr): CStruct {
  switch (e.kind) {
    case 'bool':
      return struct(1, [ctext(e.name)]);
    case 'cmp': {
      // struct Cmp { 16 bytes, 2 ptrs: name ptr0; op bits[0,16); value union tag bits[16,32); number bits[64,128); string ptr1 }
      const isString = typeof e.value === 'string';
      // An empty string value is a real value here (the union tag says "string"), so it stays an
      // empty Text rather than being normalised away.
      const cmp = struct(2, [ctext(e.name), isString ? ctextKeepEmpty(e.value as string) : null], (v) => {
        setU16(v, 0, CMP_OP[e.op]);
        setU16(v, 2, isString ? 1 : 0);
        if (!isString) setF64(v, 8, e.value as number);
      });
      return struct(1, [cmp], (v) => setU16(v, 0, 1));
    }
    case 'not':
      return struct(1, [selectNode(e.expr)], (v) => setU16(v, 0, 2));
    case 'and':
    case 'or':
      return struct(1, [list(e.args, selectNode)], (v) => setU16(v, 0, e.kind === 'and' ? 3 : 4));
  }
}

// struct ResReq { 0 bytes, 5 ptrs: select, rusage, span, same, order }
function resreqNode(r: ResReq): CStruct {
  return struct(0, [
    list(r.select, selectNode),
    // struct RusageItem { 24 bytes, 1 ptr: name ptr0; value bits[0,64); hasDuration bit 64; durationS bits[128,192) }
    list(r.rusage, (u) =>
      struct(3, [ctext(u.name)], (v) => {
        setF64(v, 0, u.value);
        if (u.duration_s !== undefined) {
          setBool(v, 64, true);
          setU64(v, 16, u.duration_s);
        }
      }),
    ),
    // struct Span { 8 bytes: ptile bits[0,32); hosts bits[32,64) }
    r.span === null
      ? null
      : struct(1, [], (v) => {
          setU32(v, 0, r.span?.ptile ?? 0);
          setU32(v, 4, r.span?.hosts ?? 0);
        }),
    r.same === null ? null : textList(r.same),
    // struct OrderKey { 8 bytes, 1 ptr: name ptr0; descending bit 0 }
    r.order === null ? null : list(r.order, (k) => struct(1, [ctext(k.name)], (v) => setBool(v, 0, k.descending))),
  ]);
}

// struct Limits { 32 bytes: runtimeS, memoryBytes, cpuS, tasks; 0 = unset }; null when none is set.
function limitsNode(l: Limits): CStruct | null {
  if (l.runtime_s === undefined && l.memory_bytes === undefined && l.cpu_s === undefined && l.tasks === undefined)
    return null;
  return struct(4, [], (v) => {
    setU64(v, 0, l.runtime_s ?? 0);
    setU64(v, 8, l.memory_bytes ?? 0);
    setU64(v, 16, l.cpu_s ?? 0);
    setU64(v, 24, l.tasks ?? 0);
  });
}

// struct Service.Probe { 32 bytes, 1 ptr: action tag bits[0,16) (command 0, tcpPort 1, http 2) ptr0;
//   periodS [64,128); timeoutS [128,192); initialDelayS [192,256); failureThreshold [32,64) }
function probeNode(p: Probe | null): CStruct | null {
  if (p === null) return null;
  const a = p.action;
  // struct Service.HttpGet { 0 bytes, 2 ptrs: port, path }
  const target =
    a.kind === 'command'
      ? ctext(a.command)
      : a.kind === 'tcp'
        ? ctext(a.port)
        : struct(0, [ctext(a.port), ctext(a.path)]);
  return struct(4, [target], (v) => {
    setU16(v, 0, a.kind === 'command' ? 0 : a.kind === 'tcp' ? 1 : 2);
    setU32(v, 4, p.failureThreshold);
    setU64(v, 8, p.period_s);
    setU64(v, 16, p.timeout_s);
    setU64(v, 24, p.initialDelay_s);
  });
}

function pair32(a: number, b: number): CStruct {
  return struct(1, [], (v) => {
    setU32(v, 0, a);
    setU32(v, 4, b);
  });
}

// struct Service { 0 bytes, 7 ptrs: restart, liveness, readiness, ports, replicas, spread, rollout }
function serviceNode(s: ServiceSpec): CStruct {
  const r = s.restart;
  return struct(0, [
    // struct Service.Restart { 32 bytes: policy [0,16); giveUpAttempts [32,64); backoffInitialS [64,128); backoffMaxS [128,192); giveUpWindowS [192,256) }
    struct(4, [], (v) => {
      setU16(v, 0, RESTART_POLICY[r.policy]);
      setU32(v, 4, r.giveUp?.attempts ?? 0);
      setU64(v, 8, r.backoffInitial_s);
      setU64(v, 16, r.backoffMax_s);
      setU64(v, 24, r.giveUp?.window_s ?? 0);
    }),
    probeNode(s.liveness),
    probeNode(s.readiness),
    // struct Service.Port { 8 bytes, 1 ptr: name ptr0; port [0,16); protocol [16,32) }
    list(s.ports, (p) =>
      struct(1, [ctext(p.name)], (v) => {
        setU16(v, 0, p.port);
        setU16(v, 2, p.protocol === 'udp' ? 1 : 0);
      }),
    ),
    s.replicas === null ? null : pair32(s.replicas.min, s.replicas.max),
    // struct Service.Spread { 8 bytes, 1 ptr: across ptr0; maxSkew [0,32) }
    s.spread === null ? null : struct(1, [ctext(s.spread.across)], (v) => setU32(v, 0, s.spread?.maxSkew ?? 0)),
    s.rollout === null ? null : pair32(s.rollout.maxUnavailable, s.rollout.maxSurge),
  ]);
}

/**
 * The canonical encoding of a profile as an AppProfile, `description` excluded.
 * struct AppProfile { 8 bytes, 10 ptrs: name 0, description 1, aliases 2, resreq 3, tasks 4, limits 5,
 *   env 6, preExec 7, postExec 8, service 9; mode [0,16); launchType [16,32); jobPrePostExec [32,48) }
 */
export function profileCanonicalBytes(p: Profile): Uint8Array {
  const root = struct(
    1,
    [
      ctext(p.name),
      null, // description: never part of the hash
      textList([...p.aliases].sort()), // order carries no meaning
      p.resreq === null ? null : resreqNode(p.resreq),
      p.tasks === null ? null : pair32(p.tasks.min, p.tasks.max),
      limitsNode(p.limits),
      // struct EnvVar { 0 bytes, 2 ptrs: name, value }
      list(p.env, (e) => struct(0, [ctext(e.name), ctext(e.value)])),
      ctext(p.preExec),
      ctext(p.postExec),
      p.service === null ? null : serviceNode(p.service as ServiceSpec),
    ],
    (v) => {
      setU16(v, 0, 0); // mode: direct is the only mode (ordinal 0)
      setU16(v, 2, p.launchType === null ? 0 : LAUNCH_TYPE[p.launchType]);
      setU16(v, 4, p.jobPrePostExec === 'forbid' ? 1 : 0);
    },
  );
  return canonicalMessage(root);
}

/** Hex SHA-256 of the profile's canonical encoding. */
export function profileHash(profile: Profile): string {
  return createHash('sha256').update(profileCanonicalBytes(profile)).digest('hex');
}

/** The first 6 hex characters, as shown to people. */
export function shortHash(hash: string): string {
  return hash.slice(0, SHORT_HASH_CHARS);
}

/** `openfoam@3f2a9c`. */
export function profileLabel(name: string, hash: string): string {
  return `${name}@${shortHash(hash)}`;
}
