// Raft core cost per committed entry: a 3-node (and a 5-node) cluster on the synchronous harness
// (zero-cost network, in-memory storage, no safety checker), proposing batches of 1 and 64 entries
// of 64 bytes on the leader and running until a quorum has them committed (followers apply each batch
// with the next one's append; every node is checked level every BENCH_COMPACT_EVERY batches).
// Run: node dist/benchmarks/raft.bench.js
import { Bench } from 'tinybench';
import { Harness } from '../raft/sim/harness.js';

/** Payload of one benchmark entry (a typical small fact). */
const BENCH_ENTRY_BYTES = 64;
/** Compact the logs every this many iterations so memory stays bounded. */
const BENCH_COMPACT_EVERY = 256;
/** Time budget of each task. */
const BENCH_TIME_MS = 2000;

function cluster(voters: number, batch: number): () => void {
  const ids = Array.from({ length: voters }, (_, i) => i + 1);
  const h = new Harness(ids, { check: false });
  h.campaign(1);
  const leader = h.node(1);
  const data = new Uint8Array(BENCH_ENTRY_BYTES).fill(7);
  let iterations = 0;
  return () => {
    const raw = leader.r;
    for (let i = 0; i < batch; i++) {
      const r = raw.propose(data);
      if (!r.ok) throw r.error;
    }
    h.stabilize();
    if (++iterations % BENCH_COMPACT_EVERY === 0) {
      // A follower learns the last commit index from the next append or heartbeat, not from an
      // append of its own (raft/README.md, "How followers learn the commit index"): two heartbeat
      // rounds of the leader (the first skips followers just sent an append) bring every node level.
      h.tick(1, 2 * leader.config.heartbeatTicks);
      for (const id of ids) {
        const n = h.node(id);
        if (n.appliedIndex !== leader.appliedIndex) throw new Error(`node ${id} did not apply everything`);
        n.applied = [];
        h.compact(id);
      }
    }
  };
}

const cases = [
  { name: '3 nodes, batch 1', voters: 3, batch: 1 },
  { name: '3 nodes, batch 64', voters: 3, batch: 64 },
  { name: '5 nodes, batch 64', voters: 5, batch: 64 },
];

const bench = new Bench({ time: BENCH_TIME_MS, warmup: true });
for (const c of cases) bench.add(c.name, cluster(c.voters, c.batch));
await bench.run();

console.log(
  'task                  | median µs/batch | entries/s (median) | mean µs/batch | entries/s (mean) | samples',
);
for (const c of cases) {
  const task = bench.getTask(c.name);
  const res = task?.result;
  if (res === undefined || !('latency' in res)) throw new Error(`benchmark ${c.name} did not complete`);
  const p50ms = res.latency.p50;
  const perSec = (c.batch * 1000) / p50ms;
  // The mean includes garbage collection and compaction pauses; the median does not.
  const meanMs = res.period;
  const perSecMean = (c.batch * 1000) / meanMs;
  console.log(
    `${c.name.padEnd(21)} | ${(p50ms * 1000).toFixed(2).padStart(15)} | ${Math.round(perSec).toLocaleString('en-US').padStart(18)} | ` +
      `${(meanMs * 1000).toFixed(2).padStart(13)} | ${Math.round(perSecMean).toLocaleString('en-US').padStart(16)} | ${res.latency.samplesCount}`,
  );
}
