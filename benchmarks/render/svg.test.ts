import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lineChart, niceTicksWithin, X_LABELS_MAX } from './svg.js';

/** The x-axis labels of a chart, as numbers, in order. */
function xLabels(svg: string): number[] {
  return [...svg.matchAll(/<text x="[\d.]+" y="362" text-anchor="middle">([^<]+)<\/text>/g)].map((m) => Number(m[1]));
}

test('a few x values are each labelled; a time series gets readable nice steps inside its range', () => {
  const counts = lineChart({
    title: 't',
    xLabel: 'clients',
    yLabel: 'submits/s',
    series: [
      {
        name: 'a',
        points: [
          [1, 700],
          [16, 5000],
          [256, 14000],
        ],
      },
    ],
  });
  assert.deepEqual(xLabels(counts), [1, 16, 256]);

  // 300 samples 0.1 s apart, from 1.3 s to 31.2 s (a benchmark's timeline).
  const points = Array.from({ length: 300 }, (_, i) => [1.3 + i * 0.1, i % 50] as const);
  const labels = xLabels(
    lineChart({ title: 't', xLabel: 'time (s)', yLabel: 'CPU %', series: [{ name: 'c', points }] }),
  );
  assert.ok(labels.length >= 4 && labels.length <= X_LABELS_MAX, `${labels.length} labels`);
  assert.ok(labels[0]! >= 1.3 && labels[labels.length - 1]! <= 31.2, `labels ${labels.join(' ')} inside the data`);
  const steps = new Set(labels.slice(1).map((l, i) => Number((l - labels[i]!).toPrecision(6))));
  assert.deepEqual([...steps], [5], 'one step, a round one');
});

test('nice ticks within a range', () => {
  assert.deepEqual(niceTicksWithin(1.3, 31.2), [5, 10, 15, 20, 25, 30]);
  assert.deepEqual(niceTicksWithin(0, 1), [0, 0.2, 0.4, 0.6, 0.8, 1]);
  assert.deepEqual(niceTicksWithin(3, 3), [3]);
});
