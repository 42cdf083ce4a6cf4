// The resource requirement scanner: the parse position over the text, its characters and tokens
// (names, numbers), and ResReqSyntaxError with the 1-based column. The grammar is at the top of
// resreq.ts; the requirement and its sections are parsed in resreq-parse.ts, resreq-select.ts and
// resreq-sections.ts.

/** Bound on `( ! (` nesting: the parser recurses once per level. */
export const RESREQ_NESTING_MAX = 64;

export class ResReqSyntaxError extends Error {
  override readonly name = 'ResReqSyntaxError';
  /**
   * @param column 1-based column of the problem in `input`.
   * @param reason what is wrong and what was expected, without the position.
   */
  constructor(
    readonly input: string,
    readonly column: number,
    readonly reason: string,
  ) {
    super(`resource requirement "${input}", column ${column}: ${reason}`);
  }
}

export const SECTIONS = ['select', 'rusage', 'span', 'same', 'order'] as const;
export type SectionName = (typeof SECTIONS)[number];

// ---- character classes ----
function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13;
}
export function isIdentStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95;
}
export function isIdentPart(c: number): boolean {
  return isIdentStart(c) || (c >= 48 && c <= 57);
}
function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** Where a parse is in the text; the parse functions advance `pos` and track the nesting `depth`. */
export class ResReqScanner {
  pos = 0;
  depth = 0;
  constructor(readonly s: string) {}

  fail(reason: string, at = this.pos): never {
    throw new ResReqSyntaxError(this.s, at + 1, reason);
  }

  ws(): void {
    const s = this.s;
    while (this.pos < s.length && isSpace(s.charCodeAt(this.pos))) this.pos++;
  }

  eof(): boolean {
    return this.pos >= this.s.length;
  }

  peek(): number {
    return this.pos < this.s.length ? this.s.charCodeAt(this.pos) : -1;
  }

  describeHere(): string {
    if (this.eof()) return 'the end';
    return `"${this.s.slice(this.pos, this.pos + 8)}"`;
  }

  expect(ch: string, what: string): void {
    this.ws();
    if (this.s.startsWith(ch, this.pos)) {
      this.pos += ch.length;
      return;
    }
    this.fail(`expected ${what} but found ${this.describeHere()}`);
  }

  ident(what: string): string {
    this.ws();
    const s = this.s;
    const start = this.pos;
    if (!isIdentStart(this.peek())) this.fail(`expected ${what} but found ${this.describeHere()}`);
    let p = start + 1;
    while (p < s.length && isIdentPart(s.charCodeAt(p))) p++;
    this.pos = p;
    return s.slice(start, p);
  }

  /** A number token at pos, or null when there is none (pos unchanged). */
  numberToken(): number | null {
    const s = this.s;
    let p = this.pos;
    if (s.charCodeAt(p) === 45 /* - */) p++;
    const digitsStart = p;
    while (p < s.length && isDigit(s.charCodeAt(p))) p++;
    if (p === digitsStart) return null;
    if (s.charCodeAt(p) === 46 /* . */ && isDigit(s.charCodeAt(p + 1))) {
      p += 2;
      while (p < s.length && isDigit(s.charCodeAt(p))) p++;
    }
    const c = s.charCodeAt(p);
    if (c === 101 || c === 69 /* e E */) {
      let q = p + 1;
      const sign = s.charCodeAt(q);
      if (sign === 43 || sign === 45) q++;
      if (isDigit(s.charCodeAt(q))) {
        while (q < s.length && isDigit(s.charCodeAt(q))) q++;
        p = q;
      }
    }
    if (p < s.length && isIdentPart(s.charCodeAt(p))) return null; // `64GB`, `3x`: not a plain number
    const v = Number(s.slice(this.pos, p));
    if (!Number.isFinite(v)) this.fail(`number out of range`);
    this.pos = p;
    return v === 0 ? 0 : v; // no -0: it would not survive a round trip through text
  }

  enter(): void {
    if (++this.depth > RESREQ_NESTING_MAX) this.fail(`nested more than ${RESREQ_NESTING_MAX} levels deep`);
  }
}
