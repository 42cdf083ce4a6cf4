// The retention soak's chart (soak.bench.ts): heap after GC and snapshot size over the jobs
// committed, two line charts (render/svg.ts) stacked in one SVG.

import { lineChart } from './render/svg.js';

/** One sample of the soak, taken every 1% of the jobs. */
export interface SoakSample {
  readonly jobs: number;
  readonly heap_mib: number;
  readonly rss_mib: number;
  readonly snapshot_mib: number;
  readonly snapshot_ms: number;
  readonly jobsInState: number;
  readonly jobsCleaned: number;
}

/** Heap (and RSS) after GC over the jobs committed, above the snapshot size. */
export function soakChart(jobs: number, samples: readonly SoakSample[]): string {
  const x = (s: SoakSample): number => s.jobs / 1e6;
  const heap = lineChart({
    title: `Retention soak, ${jobs.toLocaleString('en-US')} jobs: heap after GC`,
    xLabel: 'jobs committed (millions)',
    yLabel: 'MiB',
    series: [
      { name: 'JS heap used', points: samples.map((s) => [x(s), s.heap_mib] as const) },
      { name: 'RSS', points: samples.map((s) => [x(s), s.rss_mib] as const) },
    ],
    refs: [{ name: '1 GiB', y: 1024 }],
  });
  const snap = lineChart({
    title: 'Snapshot size (retention 60 s)',
    xLabel: 'jobs committed (millions)',
    yLabel: 'MiB',
    series: [{ name: 'snapshot', points: samples.map((s) => [x(s), s.snapshot_mib] as const) }],
  });
  const strip = (svg: string): string => svg.replace(/^<svg [^>]*>/, '').replace(/<\/svg>\s*$/, '');
  const h = 400; // render/svg.ts's chart height
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="${2 * h}" viewBox="0 0 640 ${2 * h}" font-family="sans-serif" font-size="12">`,
    `<g>${strip(heap)}</g>`,
    `<g transform="translate(0 ${h})">${strip(snap)}</g>`,
    '</svg>',
    '',
  ].join('\n');
}
