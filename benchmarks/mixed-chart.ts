// The mixed-load benchmark's chart (mixed.bench.ts): each controller's JS heap after its full
// collections (when traced), JS heap in use and RSS over time, and the submit latency (p50, p99) of each minute, as
// line charts stacked in one SVG.

import { lineChart, stackCharts } from './render/svg.js';
import { series } from './hosts-chart.js';
import type { Sample } from './proc-sampler.js';
import type { FullGc } from './gc-trace.js';

/** One minute of the run, as the chart needs it. */
export interface MinuteLatency {
  readonly minute: number;
  readonly p50_ms: number;
  readonly p99_ms: number;
}

export function mixedChart(
  title: string,
  samples: readonly Sample[],
  live: readonly FullGc[],
  ids: readonly number[],
  minutes: readonly MinuteLatency[],
): string {
  const end_s = Math.max(60, ...samples.map((s) => s.t_ms / 1000));
  const xTicks = Array.from({ length: Math.floor(end_s / 60) + 1 }, (_, i) => i * 60);
  const overTime = <S extends { readonly t_ms: number }>(
    what: string,
    yLabel: string,
    points: readonly S[],
    pick: (s: S) => Record<number, number>,
  ): string =>
    lineChart({
      title: `${title}: ${what}`,
      xLabel: 'time since the load started (s)',
      yLabel,
      series: series(points, ids, pick),
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
    ...(live.length > 0 ? [overTime('JS heap after each full collection', 'heap (MiB)', live, (l) => l.mib)] : []),
    overTime('JS heap in use', 'heap (MiB)', samples, (s) => s.heap_mib),
    overTime('RSS', 'RSS (MiB)', samples, (s) => s.rss_mib),
    latency,
  ]);
}
