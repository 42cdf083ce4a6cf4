// The process the crash tests kill: appends the CrashModel workload from several concurrent
// appenders and prints `ack <save number>` on stdout once each save resolves, so an ack the parent
// reads was durable before it was printed. Not every ack printed reaches the parent: once the pipe's
// buffer is full, Node queues stdout writes in this process, and the SIGKILL loses them (the parent
// allows for it: crash-harness.ts UNREAD_SAVES_MAX).
//
// usage: node crash-child.js <dir> <seed> <appenders> <segmentBytes> <resumeFrom> <maxSaves> [preallocateBytes]

import { CrashModel } from './crash-model.js';
import { Wal } from './wal.js';

const COMPACT_EVERY_SAVES = 97;
const COMPACT_BEHIND_COMMIT_ENTRIES = 100;

async function main(): Promise<void> {
  const [dir, seedS, appendersS, segmentBytesS, resumeS, maxSavesS, preallocateS] = process.argv.slice(2);
  if (!dir || !seedS || !appendersS || !segmentBytesS || !resumeS || !maxSavesS) {
    throw new Error('usage: crash-child <dir> <seed> <appenders> <segmentBytes> <resumeFrom> <maxSaves>');
  }
  const model = new CrashModel(Number(seedS));
  const resume = Number(resumeS);
  while (model.saveNo < resume) model.next();
  const preallocateBytes = Number(preallocateS ?? 0);
  const { wal, recovered } = await Wal.open(dir, { segmentBytes: Number(segmentBytesS), preallocateBytes });
  process.stdout.write(`ready ${recovered.lastIndex}\n`);
  const maxSaves = Number(maxSavesS);
  const appender = async (): Promise<void> => {
    while (model.saveNo < maxSaves) {
      const s = model.next();
      await wal.save(s.hardState, s.entries);
      process.stdout.write(`ack ${s.no}\n`);
      if (s.no % COMPACT_EVERY_SAVES === 0) await wal.compact(s.hardState.commit - COMPACT_BEHIND_COMMIT_ENTRIES);
    }
  };
  await Promise.all(Array.from({ length: Number(appendersS) }, appender));
  await wal.close();
  process.stdout.write('done\n');
}

main().catch((e: unknown) => {
  process.stderr.write(`crash-child: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exit(2);
});
