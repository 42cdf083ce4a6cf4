// The process the snapshot crash test kills: writes snapshot after snapshot (each a few MiB, with
// content fixed by its index) and prints `ack <index>` once each is committed.
//
// usage: node snapshot-crash-child.js <location> <firstIndex>

import { snapshotContent } from './crash-model.js';
import { SnapshotStore } from './snapshot-store.js';

const SNAPSHOTS_MAX = 10_000;

async function main(): Promise<void> {
  const [location, firstS] = process.argv.slice(2);
  if (!location || !firstS) throw new Error('usage: snapshot-crash-child <location> <firstIndex>');
  const store = await SnapshotStore.open(location);
  process.stdout.write('ready\n');
  for (let index = Number(firstS); index < Number(firstS) + SNAPSHOTS_MAX; index++) {
    await store.save({ index, term: 1, conf: { voters: [1, 2, 3], learners: [] } }, snapshotContent(index));
    process.stdout.write(`ack ${index}\n`);
  }
  await store.close();
}

main().catch((e: unknown) => {
  process.stderr.write(`snapshot-crash-child: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exit(2);
});
