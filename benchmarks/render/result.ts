// The `npm run bench` result file: its shape, a well-formedness check (what CI verifies after the
// quick run), and the writer that puts the JSON and the SVG charts side by side.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { histogram, lineChart } from './svg.js';
import { quantile } from '../../harness/stats.js';
import type { LoadResult } from '../cluster.bench.js';

export interface Machine {
  readonly cpuModel: string;
  readonly cores: number;
  readonly node: string;
  readonly platform: string;
  readonly memory_bytes: number;
  /** 300-byte append + fdatasync per loop, in the result directory's file system. */
  readonly fsyncPerSecond: number;
}

export interface MicroRun {
  readonly name: string;
  readonly command: string;
  readonly seconds: number;
  readonly exitCode: number | null;
  readonly output: readonly string[];
}

export interface BenchResult {
  readonly version: 1;
  readonly date: string;
  readonly quick: boolean;
  readonly machine: Machine;
  readonly micro: readonly MicroRun[];
  readonly load: readonly LoadResult[];
  readonly failover_ms: readonly number[];
  readonly wal: ReadonlyArray<{ appenders: number; perSecond: number }>;
  readonly seconds: number;
}

export class MalformedResultError extends Error {
  override readonly name = 'MalformedResultError';
}

const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

/** Throws MalformedResultError naming the first field that is wrong. */
export function validateResult(x: unknown): BenchResult {
  const fail = (path: string, what: string): never => {
    throw new MalformedResultError(`bench result: ${path} ${what}`);
  };
  if (typeof x !== 'object' || x === null) fail('(root)', 'is not an object');
  const r = x as Record<string, unknown>;
  if (r['version'] !== 1) fail('version', 'is not 1');
  if (typeof r['date'] !== 'string' || Number.isNaN(Date.parse(r['date']))) fail('date', 'is not an ISO date');
  if (typeof r['quick'] !== 'boolean') fail('quick', 'is not a boolean');
  const m = r['machine'] as Record<string, unknown> | undefined;
  if (typeof m !== 'object' || m === null) fail('machine', 'is missing');
  if (typeof m!['cpuModel'] !== 'string') fail('machine.cpuModel', 'is not a string');
  if (!isNum(m!['cores']) || (m!['cores'] as number) < 1) fail('machine.cores', 'is not a positive number');
  if (typeof m!['node'] !== 'string' || !String(m!['node']).startsWith('v'))
    fail('machine.node', 'is not a Node version');
  if (!isNum(m!['fsyncPerSecond']) || (m!['fsyncPerSecond'] as number) <= 0)
    fail('machine.fsyncPerSecond', 'is not a positive number');
  if (!Array.isArray(r['micro'])) fail('micro', 'is not an array');
  (r['micro'] as unknown[]).forEach((u, i) => {
    const o = u as Record<string, unknown>;
    if (typeof o['name'] !== 'string' || !isNum(o['seconds']) || !Array.isArray(o['output']))
      fail(`micro[${i}]`, 'lacks name, seconds or output');
  });
  if (!Array.isArray(r['load']) || (r['load'] as unknown[]).length === 0) fail('load', 'is empty');
  (r['load'] as unknown[]).forEach((u, i) => {
    const o = u as Record<string, unknown>;
    for (const k of ['clients', 'submits', 'seconds', 'perSecond', 'p50_ms', 'p99_ms', 'errors'])
      if (!isNum(o[k])) fail(`load[${i}].${k}`, 'is not a finite number');
  });
  if (!Array.isArray(r['failover_ms']) || !(r['failover_ms'] as unknown[]).every(isNum))
    fail('failover_ms', 'is not an array of numbers');
  if (!Array.isArray(r['wal']) || (r['wal'] as unknown[]).length === 0) fail('wal', 'is empty');
  (r['wal'] as unknown[]).forEach((u, i) => {
    const o = u as Record<string, unknown>;
    if (!isNum(o['appenders']) || !isNum(o['perSecond'])) fail(`wal[${i}]`, 'lacks appenders or perSecond');
  });
  if (!isNum(r['seconds'])) fail('seconds', 'is not a number');
  return x as BenchResult;
}

/** The charts of one result: file name → SVG text. */
export function renderCharts(r: BenchResult): Map<string, string> {
  const out = new Map<string, string>();
  const where = `${r.machine.cores} cores, ${r.machine.node}${r.quick ? ', --quick' : ''}`;
  out.set(
    'submit-throughput.svg',
    lineChart({
      title: `Durable submits/s against clients (3 controllers; ${where})`,
      xLabel: 'concurrent clients',
      yLabel: 'acknowledged submits per second',
      logX: true,
      series: [{ name: 'submits/s', points: r.load.map((l) => [l.clients, l.perSecond]) }],
    }),
  );
  out.set(
    'submit-latency.svg',
    lineChart({
      title: `Submit latency against clients (${where})`,
      xLabel: 'concurrent clients',
      yLabel: 'latency (ms)',
      logX: true,
      series: [
        { name: 'p50', points: r.load.map((l) => [l.clients, l.p50_ms]) },
        { name: 'p99', points: r.load.map((l) => [l.clients, l.p99_ms]) },
      ],
    }),
  );
  const f = [...r.failover_ms].sort((a, b) => a - b);
  out.set(
    'failover.svg',
    histogram({
      title: `Failover: SIGKILL of the leader → first acknowledged submit (${where})`,
      xLabel: 'milliseconds',
      values: f,
      marks: f.length
        ? [
            { name: 'median', x: quantile(f, 0.5) },
            { name: 'p99', x: quantile(f, 0.99) },
          ]
        : [],
    }),
  );
  out.set(
    'wal-group-commit.svg',
    lineChart({
      title: `WAL durable appends/s against concurrent appenders (${where})`,
      xLabel: 'concurrent appenders (300-byte entries)',
      yLabel: 'durable appends per second',
      logX: true,
      series: [{ name: 'WAL group commit', points: r.wal.map((w) => [w.appenders, w.perSecond]) }],
      refs: [{ name: `raw 300 B + fdatasync: ${Math.round(r.machine.fsyncPerSecond)}/s`, y: r.machine.fsyncPerSecond }],
    }),
  );
  return out;
}

/** Writes bench-<date>.json, latest.json and the charts into `dir`; returns the paths written. */
export function writeResults(dir: string, r: BenchResult): string[] {
  validateResult(r);
  mkdirSync(dir, { recursive: true });
  const stamp = r.date.replace(/[:]/g, '-').replace(/\.\d+Z$/, 'Z');
  const json = `${JSON.stringify(r, null, 2)}\n`;
  const paths = [join(dir, `bench-${stamp}.json`), join(dir, 'latest.json')];
  for (const p of paths) writeFileSync(p, json);
  for (const [name, svg] of renderCharts(r)) {
    const p = join(dir, name);
    writeFileSync(p, svg);
    paths.push(p);
  }
  return paths;
}
