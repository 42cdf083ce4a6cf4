// One configuration file being checked: its YAML document, and diagnostics that point into it
// (entry, field, line:column from the yaml library's node ranges). Pure: the caller reads the file.

import { isMap, isPair, isScalar, LineCounter, parseDocument, type Document, type Node, type YAMLError } from 'yaml';
import type { z } from 'zod';
import type { Diagnostic } from './config-types.js';
import { issueText } from './issue-text.js';

/** A YAML file larger than this is refused before parsing (a config file is hand-written). */
export const CONFIG_FILE_BYTES_MAX = 4 * 1024 * 1024;
/** YAML aliases (`*anchor`) expanded at most this many times: a guard against "billion laughs". */
export const YAML_ALIASES_MAX = 100;

export type Path = ReadonlyArray<string | number>;

/** Issues carry the value that is wrong, so each diagnostic can name it (issue-text.ts). */
const REPORT_INPUT = { reportInput: true } as const;

export class ConfigFile {
  readonly diagnostics: Diagnostic[] = [];
  readonly doc: Document.Parsed | null;
  private readonly lines = new LineCounter();

  constructor(
    readonly file: string,
    readonly text: string,
  ) {
    if (text.length > CONFIG_FILE_BYTES_MAX) {
      this.doc = null;
      this.push({
        severity: 'error',
        file,
        message: `${file} is larger than ${CONFIG_FILE_BYTES_MAX} bytes; is it the right file?`,
      });
      return;
    }
    const doc = parseDocument(text, { lineCounter: this.lines, prettyErrors: false, uniqueKeys: true });
    for (const e of doc.errors) this.pushYaml('error', e);
    for (const w of doc.warnings) this.pushYaml('warning', w);
    this.doc = doc.errors.length === 0 ? doc : null;
  }

  /** The YAML library's own error or warning, at its line and column. */
  private pushYaml(severity: 'error' | 'warning', e: YAMLError): void {
    const pos = e.linePos?.[0] ?? this.lines.linePos(e.pos[0]);
    this.push({
      severity,
      file: this.file,
      ...(pos ? { line: pos.line, column: pos.col } : {}),
      message: `YAML: ${e.message}`,
    });
  }

  get ok(): boolean {
    return !this.diagnostics.some((d) => d.severity === 'error');
  }

  push(d: Diagnostic): void {
    this.diagnostics.push(d);
  }

  private cachedValue: unknown = undefined;

  /** The plain JS value of the document (null when it did not parse); computed once. */
  value(): unknown {
    if (this.cachedValue !== undefined) return this.cachedValue;
    try {
      this.cachedValue = this.doc === null ? null : (this.doc.toJS({ maxAliasCount: YAML_ALIASES_MAX }) ?? null);
    } catch (e) {
      // yaml refuses documents whose aliases expand too far; anything else is a bug, not input.
      if (!(e instanceof ReferenceError)) throw e;
      this.push({
        severity: 'error',
        file: this.file,
        message: `YAML: ${e.message} (at most ${YAML_ALIASES_MAX} alias expansions)`,
      });
      this.cachedValue = null;
    }
    return this.cachedValue;
  }

  /** The node at a path, or the nearest ancestor that exists. */
  node(path: Path): Node | null {
    if (this.doc === null) return null;
    for (let n = path.length; n >= 0; n--) {
      const node = this.doc.getIn(path.slice(0, n), true);
      if (node !== undefined && node !== null && typeof node === 'object' && 'range' in (node as object))
        return node as Node;
    }
    return this.doc.contents as Node | null;
  }

  /** The key node of `key` in the map at `path` (to point at an unknown key rather than its value). */
  keyNode(path: Path, key: string): Node | null {
    const map = this.doc?.getIn(path, true);
    if (!isMap(map)) return null;
    for (const item of map.items) {
      if (isPair(item) && isScalar(item.key) && String(item.key.value) === key) return item.key as Node;
    }
    return null;
  }

  position(node: Node | null, offset = 0): { line?: number; column?: number } {
    if (node === null || node.range === undefined || node.range === null) return {};
    const p = this.lines.linePos(node.range[0] + offset);
    return { line: p.line, column: p.col };
  }

  /** 0 for a plain scalar, 1 for a quoted one: where the string's first character sits in the source. */
  quoteOffset(node: Node | null): number {
    return isScalar(node) && (node.type === 'QUOTE_DOUBLE' || node.type === 'QUOTE_SINGLE') ? 1 : 0;
  }

  /**
   * A diagnostic at `path`. The entry is the list item's `name` (or `[i]`) when path[1] is an index
   * into a top-level list; the field is the rest of the path.
   */
  report(
    severity: 'error' | 'warning',
    path: Path,
    message: string,
    opts: { keyNode?: Node | null; columnOffset?: number } = {},
  ): void {
    const node = opts.keyNode ?? this.node(path);
    const pos = this.position(node, opts.columnOffset ?? 0);
    const { entry, field } = this.entryAndField(path);
    this.push({
      severity,
      file: this.file,
      ...(entry !== undefined ? { entry } : {}),
      ...(field !== undefined ? { field } : {}),
      ...pos,
      message,
    });
  }

  error(path: Path, message: string, opts?: { keyNode?: Node | null; columnOffset?: number }): void {
    this.report('error', path, message, opts);
  }

  warning(path: Path, message: string, opts?: { keyNode?: Node | null; columnOffset?: number }): void {
    this.report('warning', path, message, opts);
  }

  entryAndField(path: Path): { entry?: string; field?: string } {
    let rest = path;
    let entry: string | undefined;
    if (path.length >= 2 && typeof path[1] === 'number') {
      const item = this.doc?.getIn(path.slice(0, 2));
      const get = isMap(this.doc?.getIn(path.slice(0, 2), true))
        ? (item as { get: (k: string) => unknown }).get.bind(item)
        : null;
      const named = get === null ? undefined : (get('name') ?? get('id') ?? get('role'));
      entry = typeof named === 'string' || typeof named === 'number' ? String(named) : `${String(path[0])}[${path[1]}]`;
      if (String(path[0]) === 'controllers' && typeof named === 'number') entry = `controller ${named}`;
      rest = path.slice(2);
    }
    if (rest.length === 0) return entry !== undefined ? { entry } : {};
    let field = '';
    for (const p of rest) field += typeof p === 'number' ? `[${p}]` : field === '' ? p : `.${p}`;
    return entry !== undefined ? { entry, field } : { field };
  }

  /** Checks the document against a zod schema; returns the typed data, or null after reporting every issue. */
  validate<S extends z.ZodType>(schema: S): z.output<S> | null {
    if (this.doc === null) return null;
    const before = this.diagnostics.length;
    const value = this.value();
    if (this.diagnostics.length > before) return null;
    if (value === null || value === undefined) {
      this.push({ severity: 'error', file: this.file, line: 1, column: 1, message: `${this.file} is empty` });
      return null;
    }
    const r = schema.safeParse(value, REPORT_INPUT);
    if (r.success) return r.data;
    return this.validateEntries(schema, value);
  }

  /**
   * After a failed whole-file check: checks the file key by key and each top-level list entry on
   * its own, reporting every issue, so one bad entry does not hide the others' errors or the
   * cross-file checks. Bad entries become `null` holes (indices keep pointing at the YAML);
   * returns null when the file's own frame is wrong (not a map, a required key missing or invalid).
   */
  private validateEntries<S extends z.ZodType>(schema: S, value: unknown): z.output<S> | null {
    const shape = objectShape(schema);
    if (shape === null || typeof value !== 'object' || value === null || Array.isArray(value)) {
      const r = schema.safeParse(value, REPORT_INPUT);
      if (!r.success) for (const issue of r.error.issues) this.reportIssue(schema, issue, []);
      return null;
    }
    const input = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    let fatal = false;
    for (const key of Object.keys(input)) {
      if (!(key in shape)) {
        const hint = nearest(key, Object.keys(shape));
        this.error(
          [key],
          `unknown key "${key}"${hint === null ? `; expected one of ${Object.keys(shape).join(', ')}` : `; ${hint}`}`,
          { keyNode: this.keyNode([], key) },
        );
      }
    }
    for (const [key, sub] of Object.entries(shape)) {
      const element = arrayElement(sub);
      const v = input[key];
      if (element !== null && Array.isArray(v)) {
        out[key] = v.map((item, i) => {
          const r = element.safeParse(item, REPORT_INPUT);
          if (r.success) return r.data;
          for (const issue of r.error.issues) this.reportIssue(schema, issue, [key, i]);
          return null;
        });
        continue;
      }
      const r = sub.safeParse(v, REPORT_INPUT);
      if (r.success) {
        if (r.data !== undefined) out[key] = r.data;
      } else {
        fatal = true;
        for (const issue of r.error.issues) this.reportIssue(schema, issue, [key]);
      }
    }
    return fatal ? null : (out as z.output<S>);
  }

  private reportIssue(schema: z.ZodType, issue: z.core.$ZodIssue, prefix: Path): void {
    const path: Path = [...prefix, ...(issue.path as Array<string | number>)];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const known = knownKeys(schema, path);
        const hint = known.length === 0 ? '' : `; ${nearest(key, known) ?? `expected one of ${known.join(', ')}`}`;
        this.error([...path, key], `unknown key "${key}"${hint}`, { keyNode: this.keyNode(path, key) });
      }
      return;
    }
    if (issue.code === 'invalid_type' && this.doc !== null && !this.doc.hasIn(path)) {
      const key = path[path.length - 1];
      this.error(path, `missing required key "${String(key)}" (${issue.expected})`);
      return;
    }
    this.error(path, issueText(issue));
  }
}

type Def = { type?: string; innerType?: unknown; in?: unknown; shape?: Record<string, z.ZodType>; element?: z.ZodType };

function unwrap(x: unknown): { def?: Def } {
  let d = (x as { def?: Def } | undefined)?.def;
  while (d !== undefined && (d.type === 'optional' || d.type === 'default' || d.type === 'pipe')) {
    x = d.type === 'pipe' ? d.in : d.innerType;
    d = (x as { def?: Def } | undefined)?.def;
  }
  return (x ?? {}) as { def?: Def };
}

function objectShape(schema: z.ZodType): Record<string, z.ZodType> | null {
  const d = unwrap(schema).def;
  return d?.type === 'object' && d.shape !== undefined ? d.shape : null;
}

function arrayElement(schema: z.ZodType): z.ZodType | null {
  const d = unwrap(schema).def;
  return d?.type === 'array' && d.element !== undefined ? d.element : null;
}

/** The keys the schema allows at a path (walking objects, arrays, records and optionals). */
function knownKeys(schema: z.ZodType, path: Path): string[] {
  let s: unknown = schema;
  const step = (x: unknown): unknown => {
    // zod 4 keeps each schema's definition in `def`; unwrap optionals and pipes as we go.
    let d = (x as { def?: { type?: string; innerType?: unknown; in?: unknown } } | undefined)?.def;
    while (d !== undefined && (d.type === 'optional' || d.type === 'default' || d.type === 'pipe')) {
      x = d.type === 'pipe' ? d.in : d.innerType;
      d = (x as { def?: { type?: string; innerType?: unknown; in?: unknown } } | undefined)?.def;
    }
    return x;
  };
  for (const p of path) {
    const d = (
      step(s) as { def?: { type?: string; shape?: Record<string, unknown>; element?: unknown; valueType?: unknown } }
    ).def;
    if (d === undefined) return [];
    if (typeof p === 'number') s = d.type === 'array' ? d.element : undefined;
    else s = d.type === 'object' ? d.shape?.[p] : d.type === 'record' ? d.valueType : undefined;
    if (s === undefined) return [];
  }
  const d = (step(s) as { def?: { type?: string; shape?: Record<string, unknown> } }).def;
  return d?.type === 'object' && d.shape !== undefined ? Object.keys(d.shape) : [];
}

/** `did you mean "limits"?` when a known key is within two edits of the unknown one. */
function nearest(key: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestD = 3;
  for (const k of known) {
    const dist = editDistance(key, k);
    if (dist < bestD) {
      bestD = dist;
      best = k;
    }
  }
  return best === null ? null : `did you mean "${best}"?`;
}

function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(
        (prev[j] as number) + 1,
        (cur[j - 1] as number) + 1,
        (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    prev = cur;
  }
  return prev[b.length] as number;
}
