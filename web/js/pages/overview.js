// The admin overview: counts and money from
// GET /api/admin/dashboard/overview, with its range switch.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get, query } from '../api.js';
import { t } from '../i18n.js';
import { count, money } from '../format.js';
import { Alert } from '../ui.js';
import { TopUsers } from './topusers.js';

const RANGES = ['today', '7d', '30d', 'all'];

export function Overview({ session }) {
  const perUnit = session.status.quota_per_unit;
  const [range, setRange] = useState('7d');
  const [data, setData] = useState(null);
  const [error, setError] = useState('');
  useEffect(() => {
    get('/api/admin/dashboard/overview' + query({ range })).then((env) => setData(env.data), (err) => setError(err.message));
  }, [range]);
  const stat = (label, value) => html`<div class="stat"><span>${label}</span><strong>${value}</strong></div>`;
  const cny = (v) => '¥' + (v || 0).toFixed(2);
  return html`<section>
    <h1>${t('nav.overview')}</h1>
    <${Alert} error=${error} />
    <div class="field inline">
      <label for="range">${t('overview.range')}</label>
      <select id="range" value=${range} onChange=${(e) => setRange(e.currentTarget.value)}>
        ${RANGES.map((r) => html`<option value=${r}>${t('range.' + r)}</option>`)}
      </select>
    </div>
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
    <${TopUsers} range=${range} perUnit=${perUnit} />
  </section>`;
}
