// The user's dashboard: balance and usage of the last 7 UTC days from
// GET /api/user/dashboard (rows per day and model), as charts per day and
// per model with their tables (pages/usage.js).
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get } from '../api.js';
import { t } from '../i18n.js';
import { count, money } from '../format.js';
import { Alert } from '../ui.js';
import { UsageCharts, lastDays } from './usage.js';

export function Dashboard({ session }) {
  const { user, status } = session;
  const [rows, setRows] = useState([]);
  const [error, setError] = useState('');
  useEffect(() => {
    session.refresh();
    get('/api/user/dashboard').then((env) => setRows(env.data || []), (err) => setError(err.message));
  }, []);
  const days = lastDays(7);
  const recent = rows.filter((r) => days.includes(r.day));
  const sum = (f) => recent.reduce((a, r) => a + f(r), 0);
  return html`<section>
    <h1>${t('nav.dashboard')}</h1>
    <${Alert} error=${error} />
    <div class="stats">
      <div class="stat"><span>${t('dash.balance')}</span><strong id="balance">${money(user.quota, status.quota_per_unit)}</strong></div>
      <div class="stat"><span>${t('dash.used')}</span><strong>${money(user.used_quota, status.quota_per_unit)}</strong></div>
      <div class="stat"><span>${t('dash.requests7d')}</span><strong id="requests-7d">${count(sum((r) => r.request_count || 0))}</strong></div>
      <div class="stat"><span>${t('dash.tokens7d')}</span><strong id="tokens-7d">${count(sum((r) => (r.prompt_tokens || 0) + (r.completion_tokens || 0)))}</strong></div>
    </div>
    <h2>${t('dash.last7days')}</h2>
    <${UsageCharts} rows=${recent} days=${days} perUnit=${status.quota_per_unit} prefix="dash" />
  </section>`;
}
