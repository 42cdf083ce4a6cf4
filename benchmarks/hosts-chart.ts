// The chart of the many-hosts benchmark: CPU and heap of each controller over time, the leader kill
// marked, as one SVG of two line charts stacked (render/svg.ts draws each).

import { lineChart, type Series } from './render/svg.js';
import type { Sample } from './proc-sampler.js';

const CHART_HEIGHT = 400;

export interface Mark {
  readonly name: string;
  readonly t_ms: number;
}

/** One line per controller: `pick` of each sample that has a value for it, over time (s). */
export function series<S extends { readonly t_ms: number }>(
  samples: readonly S[],
  ids: readonly number[],
  pick: (s: S) => Record<number, number>,
): Series[] {
  return ids.map((id) => ({
    name: `controller ${id}`,
    points: samples.filter((s) => pick(s)[id] !== undefined).map((s) => [s.t_ms / 1000, pick(s)[id]!] as const),
  }));
}

/** Both charts in one SVG; each mark is a dashed vertical line named at its top. */
export function hostsChart(
  title: string,
  samples: readonly Sample[],
  ids: readonly number[],
  marks: readonly Mark[],
): string {
  const cpu = lineChart({
    title: `${title}: CPU`,
    xLabel: 'time (s)',
    yLabel: 'CPU % (100 = one core)',
    series: series(samples, ids, (s) => s.cpu),
  });
  const heap = lineChart({
    title: `${title}: JS heap used`,
    xLabel: 'time (s)',
    yLabel: 'heap (MiB)',
    series: series(samples, ids, (s) => s.heap_mib),
  });
  const ts = samples.map((s) => s.t_ms / 1000);
  const tMin = Math.min(...ts);
  const tMax = Math.max(...ts);
  // render/svg.ts's plot area: x from 78 to 620 of 640.
  const x = (t_ms: number): number => 78 + ((t_ms / 1000 - tMin) / Math.max(1e-9, tMax - tMin)) * 542;
  const lines = (y0: number): string =>
    marks
      .map(
        (m) =>
          `<line x1="${x(m.t_ms).toFixed(1)}" y1="${y0 + 44}" x2="${x(m.t_ms).toFixed(1)}" y2="${y0 + 344}" stroke="#d62728" stroke-dasharray="4 3"/>` +
          `<text x="${(x(m.t_ms) + 3).toFixed(1)}" y="${y0 + 56}" fill="#d62728">${m.name.replace(/[<&>"]/g, '')}</text>`,
      )
      .join('\n');
  const strip = (svg: string): string => svg.replace(/^<svg [^>]*>/, '').replace(/<\/svg>\s*$/, '');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="${2 * CHART_HEIGHT}" viewBox="0 0 640 ${2 * CHART_HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<g>${strip(cpu)}${lines(0)}</g>`,
    `<g transform="translate(0 ${CHART_HEIGHT})">${strip(heap)}${lines(0)}</g>`,
    '</svg>',
    '',
  ].join('\n');
}
