// A value of a configuration file at its path: a duration or size (units.ts), a resource
// requirement (resreq.ts), parsed with any error reported at the exact YAML node (and, for a
// resource requirement, the column). Shared by the profile, service, queue and host rules.

import type { ConfigFile, Path } from './config-file.js';
import type { ResReq } from './profile-types.js';
import { checkResReqResources, parseResReq, ResReqSyntaxError, type ResourceRef } from './resreq.js';
import { parseDuration, parseSize, UnitSyntaxError } from './units.js';

/** A duration or size at `path` (a bare number as is), or null after reporting its syntax error. */
function unitAt(f: ConfigFile, path: Path, v: string | number, parse: (text: string) => number): number | null {
  if (typeof v === 'number') return v;
  try {
    return parse(v);
  } catch (e) {
    if (e instanceof UnitSyntaxError) {
      f.error(path, e.message);
      return null;
    }
    throw e;
  }
}

export function durationAt(f: ConfigFile, path: Path, v: string | number): number | null {
  return unitAt(f, path, v, parseDuration);
}

export function sizeAt(f: ConfigFile, path: Path, v: string | number): number | null {
  return unitAt(f, path, v, parseSize);
}

/** Parses a resreq string at `path`, reporting a syntax error at its exact column. */
export function resReqAt(
  f: ConfigFile,
  path: Path,
  text: string,
  resources: ReadonlyMap<string, ResourceRef> | null,
): ResReq | null {
  let parsed;
  try {
    parsed = parseResReq(text);
  } catch (e) {
    if (e instanceof ResReqSyntaxError) {
      const node = f.node(path);
      f.error(path, e.message, { columnOffset: f.quoteOffset(node) + e.column - 1 });
      return null;
    }
    throw e;
  }
  if (parsed.kind === 'compound') {
    f.error(
      path,
      `a profile's resreq must be one simple requirement; compound or alternative requirements ("${parsed.operator}") are not supported in a profile`,
    );
    return null;
  }
  if (resources !== null) {
    let bad = false;
    for (const p of checkResReqResources(parsed, resources)) {
      f.error(path, p.message);
      bad = true;
    }
    if (bad) return null;
  }
  return parsed;
}
