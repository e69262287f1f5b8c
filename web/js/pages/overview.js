// The admin overview: counts and money from
// GET /api/admin/dashboard/overview and every user's usage per day and
// model from GET /api/admin/dashboard/charts as charts and tables, both
// with the range switch; the range's top users below.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get, query } from '../api.js';
import { t } from '../i18n.js';
import { count, money } from '../format.js';
import { Link } from '../router.js';
import { Alert } from '../ui.js';
import { TopUsers } from './topusers.js';
import { UsageCharts, lastDays } from './usage.js';

const RANGES = ['today', '7d', '30d', 'all'];
// The chart window of each range, in UTC days: "all" charts the last 30
// days (docs/api.md, GET /api/admin/dashboard/charts).
const CHART_DAYS = { today: 1, '7d': 7, '30d': 30, all: 30 };

export function Overview({ session }) {
  const perUnit = session.status.quota_per_unit;
  const [range, setRange] = useState('7d');
  const [data, setData] = useState(null);
  const [usage, setUsage] = useState(null);
  const [error, setError] = useState('');
  // prices: how many model prices exist (root reads them; null for an
  // admin, who cannot set prices), for the first-run steps.
  const [prices, setPrices] = useState(null);
  const root = session.user.role >= 100;
  useEffect(() => {
    if (root) get('/api/model_price/').then((env) => setPrices((env.data || []).length), () => {});
  }, []);
  useEffect(() => {
    // A slower answer of a range switched away from is dropped.
    let live = true;
    const fail = (err) => live && setError(err.message);
    setError('');
    get('/api/admin/dashboard/overview' + query({ range })).then((env) => live && setData(env.data), fail);
    get('/api/admin/dashboard/charts' + query({ range })).then((env) => live && setUsage({ range, rows: env.data || [] }), fail);
    return () => { live = false; };
  }, [range]);
  const stat = (label, value) => html`<div class="stat"><span>${label}</span><strong>${value}</strong></div>`;
  const cny = (v) => '¥' + (v || 0).toFixed(2);
  const days = lastDays(CHART_DAYS[usage?.range || range]);
  return html`<section>
    <h1>${t('nav.overview')}</h1>
    <${Alert} error=${error} />
    <div class="field inline">
      <label for="range">${t('overview.range')}</label>
      <select id="range" value=${range} onChange=${(e) => setRange(e.currentTarget.value)}>
        ${RANGES.map((r) => html`<option value=${r}>${t('range.' + r)}</option>`)}
      </select>
    </div>
    ${data && html`<${FirstRun} data=${data} prices=${prices} root=${root} />`}
    ${data && html`<div class="stats">
      ${stat(t('overview.users'), `${count(data.users.enabled)} / ${count(data.users.total)}`)}
      ${stat(t('overview.active7d'), count(data.users.active_7d))}
      ${stat(t('overview.keys'), `${count(data.tokens.enabled)} / ${count(data.tokens.total)}`)}
      ${stat(t('overview.channels'), `${count(data.channels.enabled)} / ${count(data.channels.total)}`)}
      ${stat(t('overview.plans'), `${count(data.plans.enabled)} / ${count(data.plans.total)}`)}
      ${stat(t('overview.quotaToday'), money(data.quota.today, perUnit))}
      ${stat(t('overview.quotaMonth'), money(data.quota.month, perUnit))}
      ${stat(t('overview.revenue'), cny(data.revenue.total))}
      ${stat(t('overview.refund'), cny(data.revenue.refund))}
    </div>
    <p class="muted">${t('overview.enabledOfTotal')}</p>`}
    ${usage && html`<h2 id="overview-usage-title">${t('overview.usage', { range: t('range.' + (usage.range === 'all' ? '30d' : usage.range)) })}</h2>
      <${UsageCharts} rows=${usage.rows.filter((r) => days.includes(r.day))} days=${days} perUnit=${perUnit} prefix="overview" />`}
    <${TopUsers} range=${range} perUnit=${perUnit} />
  </section>`;
}

// FirstRun says what to do next while the gateway cannot serve anyone
// yet: no channel, no price or no user besides the caller (issue 30 §1).
// Each step links to its page and is ticked once done; the card goes
// away when all are.
function FirstRun({ data, prices, root }) {
  const steps = [
    { done: data.channels.total > 0, href: '/admin/channels', label: 'firstRun.channel' },
    root && { done: prices !== null && prices > 0, href: '/admin/prices', label: 'firstRun.price' },
    { done: data.users.total > 1, href: '/admin/users', label: 'firstRun.user' },
  ].filter(Boolean);
  if (prices === null && root) return null; // not known yet: no flicker
  if (steps.every((s) => s.done)) return null;
  return html`<div class="card first-run" id="first-run">
    <h2>${t('firstRun.title')}</h2>
    <p>${t('firstRun.intro')}</p>
    <ol>${steps.map((s) => html`<li class=${s.done ? 'done' : 'todo'}>
      ${s.done ? html`<s>${t(s.label)}</s> ${t('firstRun.done')}` : html`<${Link} href=${s.href}>${t(s.label)}<//>`}
    </li>`)}</ol>
  </div>`;
}
