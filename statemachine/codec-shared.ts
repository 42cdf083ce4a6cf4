// What every part of the facts codec shares: the enums' ordinals as schema/facts.capnp numbers
// them (an unknown ordinal read is a WireError), an origin as its number, the empty list, and
// FieldReaders (a struct's fields read one at a time).

import { type Reader, type StructRef, WireError } from '../wire/capnp-wire.js';
import type { CmpOp, ExecMode, LaunchType, Origin } from '../model/profile-types.js';

export const LAUNCH_TYPES: readonly LaunchType[] = ['serial', 'openmpi', 'mpich'];
export const EXEC_MODES: readonly ExecMode[] = ['direct'];
export const CMP_OPS: readonly CmpOp[] = ['>', '>=', '<', '<=', '==', '!='];
export const LIMIT_KEYS = ['runtime_s', 'memory_bytes', 'cpu_s', 'tasks'] as const;

export function enumAt<T>(values: readonly T[], i: number, what: string, at: number): T {
  const v = values[i];
  if (v === undefined) throw new WireError(`unknown ${what} ${i} (written by a newer version?)`, at);
  return v;
}

export const originOf = (n: number): Origin => (n === 1 ? 'profile' : 'job');
export const originNum = (o: Origin): number => (o === 'profile' ? 1 : 0);

export const EMPTY: readonly never[] = Object.freeze([]);

/** One reader per field of T, each reading that field alone from T's struct. */
export type FieldReaders<T> = { readonly [K in keyof T]-?: (r: Reader, s: StructRef) => T[K] };
