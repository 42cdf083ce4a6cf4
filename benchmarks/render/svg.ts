// Hand-written SVG charts (no dependency): a line chart with optional log-scaled x axis and a
// histogram. Text is escaped; every number is checked finite before it reaches the picture.

export interface Series {
  readonly name: string;
  readonly points: ReadonlyArray<readonly [number, number]>;
}

export interface LineChart {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly Series[];
  readonly logX?: boolean;
  /** Horizontal reference lines (e.g. the raw fsync rate). */
  readonly refs?: ReadonlyArray<{ name: string; y: number }>;
  /** Where the x axis is labelled (default: every distinct x of the points, or nice steps past X_LABELS_MAX of them). */
  readonly xTicks?: readonly number[];
  /** A dot (with its value as a tooltip) at every point (default true; off for long time series). */
  readonly dots?: boolean;
}

const W = 640;
const H = 400;
const M = { left: 78, right: 20, top: 44, bottom: 56 };
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];

export function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A line chart labels every x of its data up to this many; past it, nice steps (niceTicksWithin). */
export const X_LABELS_MAX = 12;

function fin(x: number): number {
  return Number.isFinite(x) ? x : 0;
}

/** The least 1, 2, 5 × 10^k step at or above `raw` (> 0). */
function niceStep(raw: number): number {
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw)!;
}

/** 1, 2, 5 × 10^k ticks covering [0, max]. */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const step = niceStep(max / count);
  const out: number[] = [];
  for (let t = 0; t <= max + step * 1e-9; t += step) out.push(Number(t.toPrecision(12)));
  if (out[out.length - 1]! < max) out.push(Number((out[out.length - 1]! + step).toPrecision(12)));
  return out;
}

/** About `count` ticks at 1, 2, 5 × 10^k steps inside [min, max] (a time axis that starts past 0). */
export function niceTicksWithin(min: number, max: number, count = 8): number[] {
  if (!(max > min)) return [min];
  const step = niceStep((max - min) / count);
  const out: number[] = [];
  for (let k = Math.ceil(min / step - 1e-9); k * step <= max + step * 1e-9; k++)
    out.push(Number((k * step).toPrecision(12)));
  return out;
}

export function fmtNum(n: number): string {
  if (Math.abs(n) >= 1e6) return `${(n / 1e6).toPrecision(3)}M`;
  if (Math.abs(n) >= 1e4) return `${(n / 1e3).toPrecision(3)}k`;
  return Number.isInteger(n) ? String(n) : n.toPrecision(3);
}

/** Charts of this file (each W x H) stacked top to bottom in one SVG. */
export function stackCharts(charts: readonly string[]): string {
  const strip = (svg: string): string => svg.replace(/^<svg [^>]*>/, '').replace(/<\/svg>\s*$/, '');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${charts.length * H}" viewBox="0 0 ${W} ${charts.length * H}" font-family="sans-serif" font-size="12">`,
    ...charts.map((c, i) => `<g transform="translate(0 ${i * H})">${strip(c)}</g>`),
    '</svg>',
    '',
  ].join('\n');
}

function frame(title: string, xLabel: string, yLabel: string, body: string[]): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect x="0" y="0" width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`,
    `<text x="${M.left + (W - M.left - M.right) / 2}" y="${H - 12}" text-anchor="middle">${esc(xLabel)}</text>`,
    `<text x="16" y="${M.top + (H - M.top - M.bottom) / 2}" text-anchor="middle" transform="rotate(-90 16 ${M.top + (H - M.top - M.bottom) / 2})">${esc(yLabel)}</text>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

export function lineChart(c: LineChart): string {
  const xs = [...c.series.flatMap((s) => s.points.map((p) => fin(p[0]))), ...(c.xTicks ?? []).map(fin)];
  const ys = [...c.series.flatMap((s) => s.points.map((p) => fin(p[1]))), ...(c.refs ?? []).map((r) => fin(r.y))];
  const logX = c.logX === true && xs.every((x) => x > 0);
  const tx = (x: number): number => (logX ? Math.log10(x) : x);
  const xMin = xs.length ? Math.min(...xs.map(tx)) : 0;
  const xMax = xs.length ? Math.max(...xs.map(tx)) : 1;
  const yTicks = niceTicks(ys.length ? Math.max(...ys) : 1);
  const yMax = yTicks[yTicks.length - 1]!;
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const px = (x: number): number => M.left + (xMax === xMin ? pw / 2 : ((tx(x) - xMin) / (xMax - xMin)) * pw);
  const py = (y: number): number => M.top + ph - (fin(y) / yMax) * ph;
  const body: string[] = [];
  for (const t of yTicks) {
    body.push(
      `<line x1="${M.left}" y1="${py(t).toFixed(1)}" x2="${W - M.right}" y2="${py(t).toFixed(1)}" stroke="#ddd"/>`,
    );
    body.push(`<text x="${M.left - 6}" y="${(py(t) + 4).toFixed(1)}" text-anchor="end">${esc(fmtNum(t))}</text>`);
  }
  // Every x of the data is labelled (client counts: 1, 16, 256) unless there are too many to read
  // (a time series): then steps of 1, 2, 5 × 10^k inside the data's range.
  const distinct = [...new Set(xs)].sort((a, b) => a - b);
  const xTickValues =
    c.xTicks ??
    (!logX && distinct.length > X_LABELS_MAX
      ? niceTicksWithin(distinct[0]!, distinct[distinct.length - 1]!)
      : distinct);
  for (const x of xTickValues)
    body.push(`<text x="${px(x).toFixed(1)}" y="${H - M.bottom + 18}" text-anchor="middle">${esc(fmtNum(x))}</text>`);
  body.push(`<line x1="${M.left}" y1="${M.top + ph}" x2="${W - M.right}" y2="${M.top + ph}" stroke="black"/>`);
  body.push(`<line x1="${M.left}" y1="${M.top}" x2="${M.left}" y2="${M.top + ph}" stroke="black"/>`);
  for (const [i, r] of (c.refs ?? []).entries()) {
    body.push(
      `<line x1="${M.left}" y1="${py(r.y).toFixed(1)}" x2="${W - M.right}" y2="${py(r.y).toFixed(1)}" stroke="#888" stroke-dasharray="6 4"/>`,
    );
    body.push(
      `<text x="${W - M.right - 4}" y="${(py(r.y) - 4 - i * 12).toFixed(1)}" text-anchor="end" fill="#555">${esc(r.name)}</text>`,
    );
  }
  c.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const pts = [...s.points].sort((a, b) => a[0] - b[0]);
    if (pts.length > 0)
      body.push(
        `<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts.map((p) => `${px(p[0]).toFixed(1)},${py(p[1]).toFixed(1)}`).join(' ')}"/>`,
      );
    if (c.dots !== false)
      for (const p of pts)
        body.push(
          `<circle cx="${px(p[0]).toFixed(1)}" cy="${py(p[1]).toFixed(1)}" r="3.5" fill="${color}"><title>${esc(`${s.name}: ${fmtNum(p[0])} → ${fmtNum(p[1])}`)}</title></circle>`,
        );
    body.push(`<rect x="${M.left + 10}" y="${M.top + 4 + i * 16}" width="12" height="3" fill="${color}"/>`);
    body.push(`<text x="${M.left + 28}" y="${M.top + 9 + i * 16}">${esc(s.name)}</text>`);
  });
  return frame(c.title, c.xLabel + (logX ? ' (log scale)' : ''), c.yLabel, body);
}

export interface Histogram {
  readonly title: string;
  readonly xLabel: string;
  readonly values: readonly number[];
  readonly bins?: number;
  /** Vertical markers (median, p99). */
  readonly marks?: ReadonlyArray<{ name: string; x: number }>;
}

export function histogram(h: Histogram): string {
  const vs = h.values.filter(Number.isFinite);
  const max = vs.length ? Math.max(...vs) : 1;
  const ticks = niceTicks(max, 6);
  const top = ticks[ticks.length - 1]!;
  const bins = h.bins ?? 20;
  const counts = new Array<number>(bins).fill(0);
  for (const v of vs) counts[Math.min(bins - 1, Math.floor((v / top) * bins))]!++;
  const cTicks = niceTicks(Math.max(1, ...counts), 4);
  const cMax = cTicks[cTicks.length - 1]!;
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const px = (x: number): number => M.left + (x / top) * pw;
  const py = (c: number): number => M.top + ph - (c / cMax) * ph;
  const body: string[] = [];
  for (const t of cTicks) {
    body.push(
      `<line x1="${M.left}" y1="${py(t).toFixed(1)}" x2="${W - M.right}" y2="${py(t).toFixed(1)}" stroke="#ddd"/>`,
    );
    body.push(`<text x="${M.left - 6}" y="${(py(t) + 4).toFixed(1)}" text-anchor="end">${t}</text>`);
  }
  for (const t of ticks)
    body.push(`<text x="${px(t).toFixed(1)}" y="${H - M.bottom + 18}" text-anchor="middle">${esc(fmtNum(t))}</text>`);
  counts.forEach((c, i) => {
    if (c === 0) return;
    const x0 = px((i * top) / bins);
    const x1 = px(((i + 1) * top) / bins);
    body.push(
      `<rect x="${x0.toFixed(1)}" y="${py(c).toFixed(1)}" width="${Math.max(1, x1 - x0 - 1).toFixed(1)}" height="${(M.top + ph - py(c)).toFixed(1)}" fill="#1f77b4"><title>${c}</title></rect>`,
    );
  });
  body.push(`<line x1="${M.left}" y1="${M.top + ph}" x2="${W - M.right}" y2="${M.top + ph}" stroke="black"/>`);
  body.push(`<line x1="${M.left}" y1="${M.top}" x2="${M.left}" y2="${M.top + ph}" stroke="black"/>`);
  for (const [i, m] of (h.marks ?? []).entries()) {
    if (!Number.isFinite(m.x)) continue;
    body.push(
      `<line x1="${px(m.x).toFixed(1)}" y1="${M.top}" x2="${px(m.x).toFixed(1)}" y2="${M.top + ph}" stroke="#d62728" stroke-dasharray="5 3"/>`,
    );
    body.push(
      `<text x="${(px(m.x) + 4).toFixed(1)}" y="${M.top + 12 + i * 14}" fill="#d62728">${esc(`${m.name} ${fmtNum(Math.round(m.x))}`)}</text>`,
    );
  }
  body.push(`<text x="${W - M.right}" y="${M.top + 12}" text-anchor="end">n = ${vs.length}</text>`);
  return frame(h.title, h.xLabel, 'count', body);
}
