/**
 * One uPlot chart: created once per mount, given new data with setData (coalesced to one call
 * per animation frame), resized with its box, destroyed on unmount. Its lines are fixed for the
 * mount, and so are its axes and ranging: give the component a new key when they change.
 *
 * For tests and assistive technology the chart is an image (role="img") whose label says what
 * it shows and each line's latest value; `data-testid="chart-<id>"`, `data-points` the number of
 * x values. Vertical dashed marks at `markers` (x values) flag iterations that raised alarms.
 *
 * Axes (axes.ts): tick labels with the decimals their step needs, so that no two ticks read the
 * same; y ranged for the data (`yKind`), a constant series in the middle of a small range; the
 * x-axis says what it counts (`xAxis`).
 */
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './charts.css';
import { tickLabels, xRange, yRange, type YKind } from './axes';
import { describeChart, formatValue, type Aligned } from './series';

export interface ChartLine {
  label: string;
  color: string;
  /** canvas dash pattern, e.g. [6, 4]; solid when absent */
  dash?: number[];
  /** draw every point (sparse series such as evaluations) */
  points?: boolean;
}

export interface ChartProps {
  id: string;
  title: string;
  /** what x counts, in the legend and the description */
  xLabel: string;
  /** the x-axis's label (default `xLabel`) */
  xAxis?: string;
  /** an x in the legend and the description (default String) */
  xText?: (x: number) => string;
  /** how y is ranged (default 'auto') */
  yKind?: YKind;
  data: Aligned;
  lines: readonly ChartLine[];
  markers?: readonly number[];
  /** plot height in CSS pixels (axes included, legend excluded) */
  height?: number;
}

const NO_MARKERS: readonly number[] = [];
const MARKER_COLOR = 'rgba(207, 34, 46, 0.55)';

/** Whole-number ticks on x (steps and iterations). */
const X_INCRS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2.5e3, 5e3, 1e4, 2e4, 2.5e4, 5e4, 1e5, 2e5, 5e5, 1e6];

const toUplot = (d: Aligned): uPlot.AlignedData => [d.x, ...d.ys] as uPlot.AlignedData;

/** The legend shows the hovered point's values, and each series' latest value when nothing is hovered. */
const legendValue =
  (format: (v: number) => string) =>
  (u: uPlot, v: number | null, series: number, idx: number | null): string => {
    if (idx == null) {
      const ys = u.data[series] ?? [];
      for (let i = ys.length - 1; i >= 0; i--) if (typeof ys[i] === 'number') return format(ys[i] as number);
      return '—';
    }
    return v == null ? '—' : format(v);
  };

/** uPlot's tick formatter: labels from the tick step uPlot found (a split its filter dropped is null). */
const ticks: uPlot.Axis.DynamicValues = (_u, splits, _axis, _space, incr) => {
  const shown = (splits as (number | null)[]).filter((v): v is number => v != null);
  const labels = tickLabels(shown, incr);
  let i = 0;
  return (splits as (number | null)[]).map((v) => (v == null ? '' : labels[i++]!));
};

const AXIS_FONT = '11px system-ui, sans-serif';
/** the y-axis's width for its longest label (about 7 px a character at 11 px, with the tick and a gap) */
const ySize: uPlot.Axis.Size = (_u, values) => Math.max(36, Math.ceil(Math.max(0, ...(values ?? []).map((v) => v.length)) * 7) + 18);

interface Setup {
  xLabel: string;
  xAxis: string;
  xText: (x: number) => string;
  yKind: YKind;
  lines: readonly ChartLine[];
}

function options(
  { xLabel, xAxis, xText, yKind, lines }: Setup,
  width: number,
  height: number,
  markers: { current: readonly number[] },
): uPlot.Options {
  return {
    width,
    height,
    scales: {
      x: { time: false, range: (_u, min, max) => xRange(min, max) },
      y: { range: (_u, min, max) => yRange(min, max, yKind) },
    },
    axes: [
      {
        size: 24,
        gap: 2,
        ticks: { size: 4 },
        font: AXIS_FONT,
        incrs: X_INCRS,
        values: ticks,
        label: xAxis,
        labelSize: 14,
        labelGap: 2,
        labelFont: AXIS_FONT,
      },
      { size: ySize, font: AXIS_FONT, values: ticks },
    ],
    series: [
      { label: xLabel, value: legendValue(xText) },
      ...lines.map((l): uPlot.Series => ({
        label: l.label,
        stroke: l.color,
        width: 1.5,
        dash: l.dash,
        value: legendValue(formatValue),
        points: l.points ? { show: true, size: 6, fill: l.color } : undefined,
      })),
    ],
    cursor: { drag: { x: true, y: false } },
    hooks: { draw: [(u) => drawMarkers(u, markers.current)] },
  };
}

function drawMarkers(u: uPlot, xs: readonly number[]): void {
  if (!xs.length) return;
  const { ctx, bbox } = u;
  ctx.save();
  ctx.strokeStyle = MARKER_COLOR;
  ctx.lineWidth = Math.max(1, devicePixelRatio);
  ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
  ctx.beginPath();
  for (const x of xs) {
    const px = Math.round(u.valToPos(x, 'x', true));
    if (px < bbox.left || px > bbox.left + bbox.width) continue;
    ctx.moveTo(px, bbox.top);
    ctx.lineTo(px, bbox.top + bbox.height);
  }
  ctx.stroke();
  ctx.restore();
}

/** New data; a zoom into part of the previous x range is kept (a double click resets it). */
function update(u: uPlot, prev: Aligned | null, next: Aligned): void {
  const { min, max } = u.scales.x!;
  const x = prev?.x ?? [];
  const zoomed = x.length > 1 && min != null && max != null && (min > x[0]! || max < x[x.length - 1]!);
  if (!zoomed) return u.setData(toUplot(next));
  u.setData(toUplot(next), false); // redraws nothing by itself
  u.setScale('x', { min: min!, max: max! });
}

export function Chart({
  id,
  title,
  xLabel,
  xAxis = xLabel,
  xText = String,
  yKind = 'auto',
  data,
  lines,
  markers = NO_MARKERS,
  height = 160,
}: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shown = useRef<Aligned | null>(null);
  const marks = useRef(markers);
  const initial = useRef({ setup: { xLabel, xAxis, xText, yKind, lines }, data, height });

  // created once per mount
  useEffect(() => {
    const el = box.current!;
    const { setup, data: d, height: h } = initial.current;
    const u = new uPlot(options(setup, el.clientWidth || 300, h, marks), toUplot(d), el);
    plot.current = u;
    shown.current = d;
    let frame = 0;
    const ro = new ResizeObserver(() => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => {
        const w = el.clientWidth;
        if (w > 0 && w !== u.width) u.setSize({ width: w, height: h });
      });
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      cancelAnimationFrame(frame);
      u.destroy();
      plot.current = null;
    };
  }, []);

  // new data or markers: one setData per animation frame
  useEffect(() => {
    const u = plot.current;
    if (!u || (shown.current === data && marks.current === markers)) return;
    const frame = requestAnimationFrame(() => {
      marks.current = markers;
      if (shown.current === data) u.redraw(false);
      else update(u, shown.current, data);
      shown.current = data;
    });
    return () => cancelAnimationFrame(frame);
  }, [data, markers]);

  const label = describeChart(
    title,
    xLabel,
    data,
    lines.map((l) => l.label),
    xText,
  );
  return (
    <figure className="chart" role="img" aria-label={label} data-testid={`chart-${id}`} data-points={data.x.length}>
      <figcaption className="chart-title" aria-hidden="true">
        {title}
      </figcaption>
      <div ref={box} className="chart-plot" style={{ minHeight: height }} />
    </figure>
  );
}
