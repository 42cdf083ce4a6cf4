// The mixed-load benchmark's chart (mixed.bench.ts): each controller's JS heap and RSS over time,
// and the submit latency (p50, p99) of each minute, as three line charts stacked in one SVG.

import { lineChart, stackCharts } from './render/svg.js';
import { series } from './hosts-chart.js';
import type { Sample } from './proc-sampler.js';

/** One minute of the run, as the chart needs it. */
export interface MinuteLatency {
  readonly minute: number;
  readonly p50_ms: number;
  readonly p99_ms: number;
}

export function mixedChart(
  title: string,
  samples: readonly Sample[],
  ids: readonly number[],
  minutes: readonly MinuteLatency[],
): string {
  const end_s = Math.max(60, ...samples.map((s) => s.t_ms / 1000));
  const xTicks = Array.from({ length: Math.floor(end_s / 60) + 1 }, (_, i) => i * 60);
  const overTime = (what: string, yLabel: string, pick: (s: Sample) => Record<number, number>): string =>
    lineChart({
      title: `${title}: ${what}`,
      xLabel: 'time since the load started (s)',
      yLabel,
      series: series(samples, ids, pick),
      xTicks,
      dots: false,
    });
  const latency = lineChart({
    title: `${title}: submit latency per minute`,
    xLabel: 'minute of the run',
    yLabel: 'ms',
    series: [
      { name: 'p50', points: minutes.map((m) => [m.minute, m.p50_ms] as const) },
      { name: 'p99', points: minutes.map((m) => [m.minute, m.p99_ms] as const) },
    ],
  });
  return stackCharts([
    overTime('JS heap used', 'heap (MiB)', (s) => s.heap_mib),
    overTime('RSS', 'RSS (MiB)', (s) => s.rss_mib),
    latency,
  ]);
}
