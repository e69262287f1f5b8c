// Charts: the vendored uPlot draws on a canvas, coloured from the theme's
// CSS variables (--chart-1 … --chart-6, --muted, --border) and redrawn when
// the theme or the box's width changes. A chart is never the only copy of
// its numbers: the page keeps a table beside it, and the plot carries an
// aria-label summary (a canvas says nothing to a screen reader).
// uPlot sets its styles through the DOM (element.style), which the
// console's Content-Security-Policy allows; its stylesheet is
// /vendor/uPlot.min.css, linked from index.html.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from '../vendor/uPlot.esm.js';
import { html } from './html.js';

export const PALETTE = 6;

// INCRS are the y axis's steps: 1, 2 and 5 times the powers of ten, so a
// tick is never a fraction of a request, a token or a unit of quota.
const INCRS = Array.from({ length: 16 }, (_, e) => [1, 2, 5].map((m) => m * 10 ** e)).flat();

// themeColours reads the current theme's colours from the CSS variables.
function themeColours() {
  const cs = getComputedStyle(document.documentElement);
  const v = (name) => cs.getPropertyValue(name).trim();
  return {
    text: v('--muted'), grid: v('--border'),
    series: Array.from({ length: PALETTE }, (_, i) => v(`--chart-${i + 1}`)),
  };
}

// onThemeChange calls f when <html data-theme> or the system's colour
// scheme changes, and returns the unsubscription.
function onThemeChange(f) {
  const mo = new MutationObserver(f);
  mo.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
  const mq = matchMedia('(prefers-color-scheme: dark)');
  mq.addEventListener('change', f);
  return () => { mo.disconnect(); mq.removeEventListener('change', f); };
}

// Chart draws categories (labels, e.g. days or model names) against one
// or more series ({label, values}: one number per label). kind 'line'
// draws lines with points (several series compare well), 'bar' draws bars
// (one series). format turns a value into text for the axis and the
// legend; summary is the text alternative; xLabel names the categories
// and short(label) is a label's text under the axis (the legend has the
// whole one). Values are integers (counts, quota): the y axis steps by
// whole units, and with no data it spans 0 to emptyTop.
export function Chart({ id, title, labels, series, kind = 'line', format = String, summary, xLabel = '',
  short = (l) => l, emptyTop = 10, height = 220 }) {
  const box = useRef(null);
  const key = JSON.stringify([title, labels, series, kind, xLabel]);
  useEffect(() => {
    const el = box.current;
    let plot = null;
    const width = () => Math.max(240, el.clientWidth);
    const draw = () => {
      if (plot) plot.destroy();
      const c = themeColours();
      const xs = labels.map((_, i) => i);
      // As many category labels as fit (about 72 px each); the table has all.
      const step = Math.max(1, Math.ceil(labels.length / Math.max(1, Math.floor((width() - 100) / 72))));
      const axis = { stroke: c.text, ticks: { stroke: c.grid }, grid: { stroke: c.grid, width: 1 } };
      plot = new uPlot({
        width: width(), height,
        scales: {
          x: { time: false, range: () => [-0.5, Math.max(0.5, labels.length - 0.5)] },
          y: { range: (u, min, max) => [0, max > 0 ? Math.max(max * 1.1, 1) : emptyTop] },
        },
        axes: [
          { ...axis, grid: { show: false }, splits: () => xs.filter((i) => i % step === 0),
            values: (u, splits) => splits.map((i) => (labels[i] == null ? '' : short(labels[i]))) },
          { ...axis, size: 84, incrs: INCRS, values: (u, splits) => splits.map((v) => format(v)) },
        ],
        series: [
          { label: xLabel, value: (u, i) => (i == null ? '' : labels[i] ?? '') },
          ...series.map((s, i) => {
            const colour = c.series[i % PALETTE];
            return {
              label: s.label, stroke: colour, width: 2,
              fill: kind === 'bar' ? colour : undefined,
              paths: kind === 'bar' ? uPlot.paths.bars({ size: [0.6, 64] }) : undefined,
              points: { show: kind !== 'bar', size: 6, fill: colour },
              value: (u, v) => (v == null ? '' : format(v)),
            };
          }),
        ],
        // The legend names the series only: a live legend showed "Day: /
        // Cost:" with empty values until the pointer was over the plot
        // (issue 30 §3); the values are in the tables below the charts.
        legend: { live: false },
        cursor: { drag: { x: false, y: false } },
      }, [xs, ...series.map((s) => s.values)], el);
    };
    draw();
    const off = onThemeChange(draw);
    const ro = new ResizeObserver(() => {
      if (plot && Math.abs(plot.width - width()) > 4) plot.setSize({ width: width(), height });
    });
    ro.observe(el);
    return () => { off(); ro.disconnect(); if (plot) plot.destroy(); };
  }, [key, emptyTop]);
  const points = series.reduce((n, s) => n + s.values.filter((v) => v > 0).length, 0);
  return html`<figure class="chart" id=${id} data-series=${series.length} data-points=${points}>
    <figcaption>${title}</figcaption>
    <div class="chart-plot" ref=${box} role="img" aria-label=${summary}></div>
  </figure>`;
}
