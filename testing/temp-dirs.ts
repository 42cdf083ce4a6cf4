// Scratch directories for tests that need a fresh one per call, all removed after each test.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'node:test';

/**
 * A maker of fresh paths `<tmp>/<prefix>XXXXXX/<leaf>` (the leaf is not created: the code under test
 * makes it); every directory made in a test is removed after it. Call once, at the top of a test file.
 */
export function tempDirsPerTest(prefix: string, leaf: string): () => string {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return () => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(d);
    return join(d, leaf);
  };
}
