// The configuration files as loadConfig's cross-file rules see them (Parsed: each file validated
// on its own, a broken list entry a null hole), and the two helpers every rule uses: the names an
// entry list defines, and the report of a name defined twice.

import type { ConfigFile } from './config-file.js';
import type { ConfigFileName, FILE_SCHEMAS } from './config-schema.js';

/** A file's data after validation: a list entry that failed its own check is a null hole (indices keep pointing at the YAML). */
type Holey<T> = { [K in keyof T]: T[K] extends ReadonlyArray<infer E> ? Array<E | null> : T[K] };
export type Parsed = {
  [K in ConfigFileName]?: { f: ConfigFile; data: Holey<ReturnType<(typeof FILE_SCHEMAS)[K]['parse']>> | null };
};

/** The `name` of every entry of a top-level list as written, valid or not (so a broken entry still counts as defined). */
export function rawNames(f: ConfigFile, listKey: string): Set<string> {
  const v = f.value() as Record<string, unknown> | null;
  const list = v !== null && typeof v === 'object' ? v[listKey] : null;
  const out = new Set<string>();
  if (Array.isArray(list))
    for (const e of list)
      if (e !== null && typeof e === 'object' && typeof (e as { name?: unknown }).name === 'string')
        out.add((e as { name: string }).name);
  return out;
}

/** Reports each name used twice in a top-level list; returns the first index of each name. */
export function uniqueNames(
  f: ConfigFile,
  listKey: string,
  items: ReadonlyArray<{ name: string } | null>,
  what: string,
): Map<string, number> {
  const seen = new Map<string, number>();
  items.forEach((item, i) => {
    if (item === null) return;
    const first = seen.get(item.name);
    if (first !== undefined) {
      f.error(
        [listKey, i, 'name'],
        `${what} "${item.name}" is defined twice (first as entry ${first + 1}); names must be unique`,
      );
    } else seen.set(item.name, i);
  });
  return seen;
}

/**
 * A rule over a file's top-level list of named entries: each entry built once per name, in order
 * (`build` returns null to leave one out after reporting it), names defined twice reported and their
 * later entries skipped, broken entries (null holes) skipped. An absent file gives an empty map;
 * one that failed its own check gives null.
 */
export function eachNamed<T extends { readonly name: string }, V>(
  p: { readonly f: ConfigFile; readonly data: object | null } | undefined,
  listKey: string,
  what: string,
  build: (item: T, path: readonly [string, number], f: ConfigFile) => V | null,
): Map<string, V> | null {
  const out = new Map<string, V>();
  if (p === undefined) return out;
  if (p.data === null) return null;
  // The caller names the list's entry type: the schema of its file (config-schema.ts) has checked it.
  const items = (p.data as Record<string, ReadonlyArray<T | null> | undefined>)[listKey] ?? [];
  uniqueNames(p.f, listKey, items, what);
  items.forEach((item, i) => {
    if (item === null || out.has(item.name)) return;
    const v = build(item, [listKey, i], p.f);
    if (v !== null) out.set(item.name, v);
  });
  return out;
}
