// A job's dependency expression (`-w`, LSF's syntax): conditions `done(REF)`, `exit(REF)`,
// `ended(REF)`, `started(REF)` joined with `&&`, `||`, `!` and parentheses, where REF is a job id
// (`123`), an array element (`123[4]`), a whole array (`123[*]` or `123`), or a job name
// (`build`, `sweep[*]`, `sweep[4]`). Pure text → tree; statemachine/dependency.ts resolves the names
// against the state at submit and evaluates the tree on the applied state.

export type DepCondition = 'done' | 'exit' | 'ended' | 'started';
export const DEP_CONDITIONS: readonly DepCondition[] = ['done', 'exit', 'ended', 'started'];

/** A reference: an id or a name, and an index (`*`: every element; null: none given). */
export interface DepRef {
  readonly id: number | null;
  readonly name: string | null;
  readonly index: number | '*' | null;
}

export type DepExpr =
  | { readonly kind: 'cond'; readonly cond: DepCondition; readonly ref: DepRef }
  | { readonly kind: 'and' | 'or'; readonly left: DepExpr; readonly right: DepExpr }
  | { readonly kind: 'not'; readonly expr: DepExpr };

/** Longest dependency expression accepted (a submit's text field bound is larger). */
export const DEPENDENCY_CHARS_MAX = 4096;
/** Most conditions in one expression. */
export const DEPENDENCY_CONDITIONS_MAX = 256;

export class DependencySyntaxError extends Error {
  override readonly name = 'DependencySyntaxError';
}

type Tok = { t: '(' | ')' | '&&' | '||' | '!' | 'word' | 'end'; v: string; at: number };

const WORD_RE = /[A-Za-z0-9_.\-[\]*]/;

function tokenize(text: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === ' ' || c === '\t') {
      i++;
    } else if (c === '(' || c === ')' || c === '!') {
      out.push({ t: c, v: c, at: i });
      i++;
    } else if (text.startsWith('&&', i) || text.startsWith('||', i)) {
      out.push({ t: text.slice(i, i + 2) as '&&' | '||', v: text.slice(i, i + 2), at: i });
      i += 2;
    } else if (WORD_RE.test(c)) {
      const at = i;
      while (i < text.length && WORD_RE.test(text[i]!)) i++;
      out.push({ t: 'word', v: text.slice(at, i), at });
    } else throw new DependencySyntaxError(`unexpected ${JSON.stringify(c)} at column ${i + 1}`);
  }
  out.push({ t: 'end', v: '', at: text.length });
  return out;
}

const REF_RE = /^(?:([0-9]+)|([A-Za-z_][A-Za-z0-9_.-]*))(?:\[(\*|[0-9]+)\])?$/;

function parseRef(word: string, at: number): DepRef {
  const m = REF_RE.exec(word);
  if (m === null)
    throw new DependencySyntaxError(
      `${JSON.stringify(word)} at column ${at + 1} is not a job id (123, 123[4], 123[*]) or a job name (build, sweep[*])`,
    );
  const index = m[3] === undefined ? null : m[3] === '*' ? '*' : Number(m[3]);
  if (index === 0) throw new DependencySyntaxError(`index 0 at column ${at + 1}: array indices start at 1`);
  if (m[1] !== undefined) {
    const id = Number(m[1]);
    if (!Number.isSafeInteger(id) || id < 1)
      throw new DependencySyntaxError(`job id ${m[1]} at column ${at + 1} is not a valid job id`);
    return { id, name: null, index };
  }
  return { id: null, name: m[2]!, index };
}

/** Parses `text`; throws DependencySyntaxError naming what is wrong and where. */
export function parseDependency(text: string): DepExpr {
  if (text.length > DEPENDENCY_CHARS_MAX)
    throw new DependencySyntaxError(`it is ${text.length} characters long, at most ${DEPENDENCY_CHARS_MAX}`);
  const toks = tokenize(text);
  let pos = 0;
  let conditions = 0;
  const peek = (): Tok => toks[pos]!;
  const expect = (t: Tok['t'], what: string): Tok => {
    const k = peek();
    if (k.t !== t) throw new DependencySyntaxError(`expected ${what} at column ${k.at + 1}, found ${describe(k)}`);
    pos++;
    return k;
  };
  const or = (): DepExpr => {
    let left = and();
    while (peek().t === '||') {
      pos++;
      left = { kind: 'or', left, right: and() };
    }
    return left;
  };
  const and = (): DepExpr => {
    let left = unary();
    while (peek().t === '&&') {
      pos++;
      left = { kind: 'and', left, right: unary() };
    }
    return left;
  };
  const unary = (): DepExpr => {
    const k = peek();
    if (k.t === '!') {
      pos++;
      return { kind: 'not', expr: unary() };
    }
    if (k.t === '(') {
      pos++;
      const e = or();
      expect(')', '")"');
      return e;
    }
    if (k.t !== 'word')
      throw new DependencySyntaxError(
        `expected a condition (done, exit, ended, started) at column ${k.at + 1}, found ${describe(k)}`,
      );
    pos++;
    const cond = k.v as DepCondition;
    if (!DEP_CONDITIONS.includes(cond))
      throw new DependencySyntaxError(
        `unknown condition ${JSON.stringify(k.v)} at column ${k.at + 1}; use done, exit, ended or started`,
      );
    expect('(', `"(" after ${cond}`);
    const w = expect('word', `a job id or name inside ${cond}(...)`);
    const ref = parseRef(w.v, w.at);
    expect(')', `")" after ${cond}(${w.v}`);
    if (++conditions > DEPENDENCY_CONDITIONS_MAX)
      throw new DependencySyntaxError(`more than ${DEPENDENCY_CONDITIONS_MAX} conditions`);
    return { kind: 'cond', cond, ref };
  };
  if (peek().t === 'end') throw new DependencySyntaxError('it is empty');
  const e = or();
  if (peek().t !== 'end')
    throw new DependencySyntaxError(
      `unexpected ${describe(peek())} at column ${peek().at + 1} (join conditions with && or ||)`,
    );
  return e;
}

function describe(k: Tok): string {
  return k.t === 'end' ? 'the end' : JSON.stringify(k.v);
}

export function formatRef(r: DepRef): string {
  const base = r.id !== null ? String(r.id) : (r.name ?? '');
  return r.index === null ? base : `${base}[${r.index}]`;
}

/** The canonical text of an expression (parenthesised where needed); parseDependency reads it back the same. */
export function formatDependency(e: DepExpr): string {
  switch (e.kind) {
    case 'cond':
      return `${e.cond}(${formatRef(e.ref)})`;
    case 'not':
      return e.expr.kind === 'cond' || e.expr.kind === 'not'
        ? `!${formatDependency(e.expr)}`
        : `!(${formatDependency(e.expr)})`;
    case 'and':
    case 'or': {
      const side = (s: DepExpr): string =>
        s.kind === 'cond' || s.kind === 'not' || s.kind === e.kind ? formatDependency(s) : `(${formatDependency(s)})`;
      const right = e.right.kind === e.kind ? `(${formatDependency(e.right)})` : side(e.right);
      return `${side(e.left)} ${e.kind === 'and' ? '&&' : '||'} ${right}`;
    }
  }
}

/** Every condition of the expression, left to right. */
export function conditionsOf(
  e: DepExpr,
  out: Extract<DepExpr, { kind: 'cond' }>[] = [],
): Extract<DepExpr, { kind: 'cond' }>[] {
  if (e.kind === 'cond') out.push(e);
  else if (e.kind === 'not') conditionsOf(e.expr, out);
  else {
    conditionsOf(e.left, out);
    conditionsOf(e.right, out);
  }
  return out;
}
