// Durability helpers: what "durable" means for a directory entry on Linux.

import { promises as fsp } from 'node:fs';

/**
 * fsyncs a directory, making the creation, deletion or rename of an entry in it durable (without
 * it, a crash can leave a new segment file's name missing even though its data were synced).
 */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await fsp.open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
