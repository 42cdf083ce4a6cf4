// The fault injector: which fault kinds this machine allows, and the seeded loop that injects one
// after a random gap (kill or pause a node, transfer leadership, wipe a follower, partition),
// records it, and waits for the cluster to be whole again before the next.

import { probeNetLab } from '../netlab.js';
import { waitForLeader, waitHealthy } from './cluster-waits.js';
import { sleep, type Drill } from './drill-context.js';
import { QUIET_LIMIT_MS, type FaultRecord } from './drill-types.js';
import { outcomeOf } from './history.js';
import {
  DOWN_MS_MAX,
  DOWN_MS_MIN,
  FAULT_KINDS,
  GAP_MS_MAX,
  GAP_MS_MIN,
  PARTITION_MS_MAX,
  PARTITION_MS_MIN,
  PAUSE_MS_MAX,
  PAUSE_MS_MIN,
  pickFault,
  type FaultKind,
} from './schedule.js';

/** Which fault kinds this machine allows, and why the others are skipped. */
export function probeFaults(): { usable: Set<FaultKind>; skipped: Array<{ kind: FaultKind; reason: string }> } {
  const usable = new Set<FaultKind>(FAULT_KINDS);
  const skipped: Array<{ kind: FaultKind; reason: string }> = [];
  const lab = probeNetLab();
  if (!lab.ok) {
    usable.delete('partition');
    skipped.push({
      kind: 'partition',
      reason: `${lab.reason}; without a namespace per controller they all share 127.0.0.1 and there is no link between two of them to cut`,
    });
  }
  return { usable, skipped };
}

/** Faults until the duration is over (and at least `minFaults` were injected), each healed before the next. */
export async function faultLoop(d: Drill, usable: Set<FaultKind>): Promise<void> {
  const end = d.opts.duration_s * 1000;
  while (!d.aborted) {
    const gap = d.rng.int(GAP_MS_MIN, GAP_MS_MAX);
    if (d.now() + gap >= end && d.faults.length >= (d.opts.minFaults ?? 0)) break;
    await sleep(gap);
    if (d.aborted) break;
    const n = d.faults.length;
    await inject(d, pickFault(d.rng, usable));
    const ended = d.now();
    await waitHealthy(d, QUIET_LIMIT_MS);
    const f = d.faults[n];
    if (f !== undefined) f.recovered_ms = d.now() - ended;
  }
}

/** Where a fault strikes: the leader now, and the others. */
interface Aim {
  readonly leader: number;
  readonly followers: number[];
}

export async function inject(d: Drill, kind: FaultKind): Promise<void> {
  const leader = await waitForLeader(d, 30_000);
  const aim: Aim = { leader, followers: [...d.t.ids].filter((id) => id !== leader) };
  switch (kind) {
    case 'kill-leader':
    case 'kill-follower':
      return killNode(d, kind, aim);
    case 'pause-node':
      return pauseNode(d, aim);
    case 'transfer-leader':
      return transferLeader(d, aim);
    case 'wipe-follower':
      return wipeFollower(d, aim);
    case 'partition':
      return partition(d, aim);
  }
}

function record(d: Drill, kind: FaultKind, node: number, detail?: string, variant?: string): FaultRecord {
  const f: FaultRecord = {
    kind,
    node,
    at_ms: d.now(),
    failover_ms: null,
    ...(detail ? { detail } : {}),
    ...(variant ? { variant } : {}),
  };
  d.faults.push(f);
  d.log(`${kind} node ${node}${detail ? ` (${detail})` : ''}`);
  return f;
}

async function killNode(d: Drill, kind: 'kill-leader' | 'kill-follower', aim: Aim): Promise<void> {
  const node = kind === 'kill-leader' ? aim.leader : d.rng.pick(aim.followers);
  const down = d.rng.int(DOWN_MS_MIN, DOWN_MS_MAX);
  record(d, kind, node, d.t.kind === 'own' ? `down ${down} ms` : 'SIGKILL; its supervisor restarts it');
  await d.t.kill(node);
  if (d.t.kind === 'own') await sleep(down);
  await d.t.restart(node, false);
}

async function pauseNode(d: Drill, { leader, followers }: Aim): Promise<void> {
  const node = d.rng.next() < 0.6 ? leader : d.rng.pick(followers);
  const pause = d.rng.int(PAUSE_MS_MIN, PAUSE_MS_MAX);
  record(d, 'pause-node', node, `SIGSTOP for ${pause} ms${node === leader ? ', the leader' : ''}`);
  d.paused.add(node);
  d.t.pause(node);
  await sleep(pause);
  d.t.resume(node);
  d.paused.delete(node);
}

async function transferLeader(d: Drill, { leader }: Aim): Promise<void> {
  record(d, 'transfer-leader', leader, 'cluster.transferLeader as admin');
  try {
    const r = (await d.admin.call('cluster.transferLeader', {})) as { transferred: boolean; to: number };
    d.h.count('cluster.transferLeader', r.transferred ? 'ok' : 'not-transferred');
  } catch (err) {
    d.h.count('cluster.transferLeader', outcomeOf(err).result);
  }
}

async function wipeFollower(d: Drill, { followers }: Aim): Promise<void> {
  const node = d.rng.pick(followers);
  const down = d.rng.int(DOWN_MS_MIN, DOWN_MS_MAX);
  record(d, 'wipe-follower', node, 'data directory wiped');
  await d.t.kill(node);
  await sleep(down);
  const p = await d.t.restart(node, true);
  await waitHealthy(d, QUIET_LIMIT_MS, 5);
  if (p?.log.some((l) => l.includes('installed a snapshot from the leader'))) d.snapshotInstalls++;
}

async function partition(d: Drill, { leader, followers }: Aim): Promise<void> {
  const lab = d.t.lab;
  if (lab === null) throw new Error('partition faults need the controllers in network namespaces (see probeFaults)');
  const span = d.rng.int(PARTITION_MS_MIN, PARTITION_MS_MAX);
  const shape = d.rng.pick([
    'leader-minority',
    'leader-minority',
    'isolate-leader',
    'isolate-leader',
    'leader-from-one',
    'isolate-follower',
  ] as const);
  const other = d.rng.pick(followers);
  switch (shape) {
    case 'leader-minority':
      // The old leader still hears its clients but no peer: it must step down, and
      // nothing it says afterwards may be a stale read or a lost write.
      record(d, 'partition', leader, `cut from both peers for ${span} ms, clients still reach it`, shape);
      for (const f of followers) lab.cut(leader, f);
      break;
    case 'isolate-leader':
      record(d, 'partition', leader, `isolated from everyone for ${span} ms`, shape);
      lab.isolate(leader);
      break;
    case 'leader-from-one':
      record(d, 'partition', leader, `cut from follower ${other} for ${span} ms`, shape);
      lab.cut(leader, other);
      break;
    case 'isolate-follower':
      record(d, 'partition', other, `follower isolated from everyone for ${span} ms`, shape);
      lab.isolate(other);
      break;
  }
  d.partitioned = true;
  await sleep(span);
  lab.heal();
  d.partitioned = false;
}
