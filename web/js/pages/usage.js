// Usage per day and per model, as charts and tables, from the rows of
// GET /api/user/dashboard or GET /api/admin/dashboard/charts (both
// {day, model_name, request_count, quota, prompt_tokens,
// completion_tokens}, one row per UTC day and model). Shared by the user's
// dashboard and the admin overview. The tables are the charts' text
// alternative and stay below them.
import { useState } from 'preact/hooks';
import { html } from '../html.js';
import { t } from '../i18n.js';
import { count, money } from '../format.js';
import { Chart, PALETTE } from '../chart.js';

// lastDays lists the last n UTC days, oldest first, as "YYYY-MM-DD".
export function lastDays(n) {
  const out = [];
  for (let i = n - 1; i >= 0; i--) out.push(new Date(Date.now() - i * 86400000).toISOString().slice(0, 10));
  return out;
}

const METRICS = ['quota', 'requests', 'tokens'];

// value is one row's figure for a metric.
const value = (r, metric) => (metric === 'quota' ? r.quota || 0
  : metric === 'requests' ? r.request_count || 0 : (r.prompt_tokens || 0) + (r.completion_tokens || 0));

// totals sums rows into {requests, tokens, quota}.
function totals(rows) {
  return {
    requests: rows.reduce((a, r) => a + value(r, 'requests'), 0),
    tokens: rows.reduce((a, r) => a + value(r, 'tokens'), 0),
    quota: rows.reduce((a, r) => a + value(r, 'quota'), 0),
  };
}

// UsageCharts shows rows over days (the "YYYY-MM-DD" list, oldest first):
// a metric switch, the per-day chart (one line per model: the busiest
// PALETTE-1 models, the rest summed as "other models"), the per-model bar
// chart, and the two tables. prefix makes the element ids unique.
export function UsageCharts({ rows, days, perUnit, prefix }) {
  const [metric, setMetric] = useState('quota');
  const fmt = metric === 'quota' ? (v) => money(v, perUnit) : (v) => count(Math.round(v));
  const metricName = t('usage.' + metric);
  // With no usage the y axis spans ¥0.01 or 10.
  const emptyTop = metric === 'quota' ? Math.max(1, Math.round((perUnit || 1000000) / 100)) : 10;

  const byDay = days.map((day) => ({ day, ...totals(rows.filter((r) => r.day === day)) }));
  const modelNames = [...new Set(rows.map((r) => r.model_name))];
  const byModel = modelNames.map((m) => ({ model: m, ...totals(rows.filter((r) => r.model_name === m)) }))
    .sort((a, b) => b[metric] - a[metric] || a.model.localeCompare(b.model));

  // The daily chart's lines: the busiest models, then the others summed.
  const shown = byModel.slice(0, byModel.length > PALETTE ? PALETTE - 1 : PALETTE).map((m) => m.model);
  const lines = shown.map((m) => ({
    label: m,
    values: days.map((d) => rows.filter((r) => r.day === d && r.model_name === m).reduce((a, r) => a + value(r, metric), 0)),
  }));
  if (byModel.length > shown.length) {
    lines.push({
      label: t('usage.others'),
      values: days.map((d) => rows.filter((r) => r.day === d && !shown.includes(r.model_name)).reduce((a, r) => a + value(r, metric), 0)),
    });
  }

  const total = byDay.reduce((a, d) => a + d[metric], 0);
  const peak = byDay.reduce((best, d) => (d[metric] > best[metric] ? d : best), byDay[0] || { day: '', [metric]: 0 });
  const daySummary = total === 0 ? t('usage.summaryEmpty', { metric: metricName })
    : t('usage.summaryDays', { metric: metricName, from: days[0], to: days[days.length - 1], total: fmt(total), peak: peak.day, peakValue: fmt(peak[metric]) });
  const modelSummary = byModel.length === 0 ? t('usage.summaryEmpty', { metric: metricName })
    : t('usage.summaryModels', { metric: metricName, n: byModel.length, top: byModel[0].model, topValue: fmt(byModel[0][metric]) });
  const maxRequests = Math.max(1, ...byDay.map((d) => d.requests));

  return html`<div class="usage" id=${prefix + '-usage'}>
    <div class="field inline">
      <label for=${prefix + '-metric'}>${t('usage.metric')}</label>
      <select id=${prefix + '-metric'} value=${metric} onChange=${(e) => setMetric(e.currentTarget.value)}>
        ${METRICS.map((m) => html`<option value=${m} selected=${m === metric}>${t('usage.' + m)}</option>`)}
      </select>
    </div>
    <div class="charts">
      <${Chart} id=${prefix + '-chart-days'} title=${t('usage.perDay', { metric: metricName })} xLabel=${t('dash.day')}
        labels=${days} short=${(d) => d.slice(5)} series=${lines.length ? lines : [{ label: metricName, values: days.map(() => 0) }]}
        format=${fmt} summary=${daySummary} emptyTop=${emptyTop} />
      <${Chart} id=${prefix + '-chart-models'} kind="bar" title=${t('usage.perModel', { metric: metricName })} xLabel=${t('usage.model')}
        labels=${byModel.map((m) => m.model)} series=${[{ label: metricName, values: byModel.map((m) => m[metric]) }]}
        format=${fmt} summary=${modelSummary} emptyTop=${emptyTop} />
    </div>
    <div class="table-scroll"><table id=${prefix + '-days'}>
      <caption>${t('usage.byDay')}</caption>
      <thead><tr><th>${t('dash.day')}</th><th>${t('dash.requests')}</th><th>${t('dash.tokens')}</th><th>${t('dash.cost')}</th></tr></thead>
      <tbody>${byDay.map((d) => html`<tr key=${d.day} data-day=${d.day}>
        <td>${d.day}</td>
        <td class="requests"><meter min="0" max=${maxRequests} value=${d.requests} aria-hidden="true"></meter> ${count(d.requests)}</td>
        <td class="tokens">${count(d.tokens)}</td><td class="quota">${money(d.quota, perUnit)}</td>
      </tr>`)}</tbody>
    </table></div>
    <div class="table-scroll"><table id=${prefix + '-models'}>
      <caption>${t('usage.byModel')}</caption>
      <thead><tr><th>${t('usage.model')}</th><th>${t('dash.requests')}</th><th>${t('dash.tokens')}</th><th>${t('dash.cost')}</th></tr></thead>
      <tbody>
        ${byModel.length === 0 && html`<tr><td colspan="4">${t('list.empty')}</td></tr>`}
        ${byModel.map((m) => html`<tr key=${m.model} data-model=${m.model}>
          <td><code>${m.model}</code></td><td class="requests">${count(m.requests)}</td>
          <td class="tokens">${count(m.tokens)}</td><td class="quota">${money(m.quota, perUnit)}</td>
        </tr>`)}
      </tbody>
    </table></div>
  </div>`;
}
