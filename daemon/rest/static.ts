// The web status page's files (web/ at the package root): a fixed list, read once, served with
// their content type and a strict Content-Security-Policy (scripts and styles from this origin
// only). No other path is read from disk.

import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';

// web/ at the package root: this file is <package>/dist/daemon/rest/static.js (or another build folder).
export const WEB_DIR = fileURLToPath(new URL('../../../web/', import.meta.url));

const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/index.html': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
};

const CSP = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

export class StaticPage {
  private readonly cache = new Map<string, Buffer>();

  constructor(private readonly dir: string = WEB_DIR) {}

  has(path: string): boolean {
    return Object.hasOwn(FILES, path);
  }

  /** Serves one of the page's files; false when `path` is none of them. */
  serve(path: string, res: ServerResponse): boolean {
    const f = Object.hasOwn(FILES, path) ? FILES[path] : undefined;
    if (f === undefined) return false;
    let body = this.cache.get(f.file);
    if (body === undefined) {
      body = readFileSync(this.dir + f.file);
      this.cache.set(f.file, body);
    }
    res
      .writeHead(200, {
        'content-type': f.type,
        'content-length': String(body.length),
        'cache-control': 'no-cache',
        'content-security-policy': CSP,
        'x-content-type-options': 'nosniff',
      })
      .end(body);
    return true;
  }
}
