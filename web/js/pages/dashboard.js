// The user's dashboard: balance and usage of the last 7 UTC days from
// GET /api/user/dashboard (rows per day and model, summed here per day).
// Charts come later (docs/console.md); a <meter> per day shows the shape.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get } from '../api.js';
import { t } from '../i18n.js';
import { count, money } from '../format.js';
import { Alert } from '../ui.js';

// lastDays lists the last n UTC days, oldest first, as "YYYY-MM-DD".
function lastDays(n) {
  const out = [];
  for (let i = n - 1; i >= 0; i--) out.push(new Date(Date.now() - i * 86400000).toISOString().slice(0, 10));
  return out;
}

export function Dashboard({ session }) {
  const { user, status } = session;
  const [rows, setRows] = useState([]);
  const [error, setError] = useState('');
  useEffect(() => {
    session.refresh();
    get('/api/user/dashboard').then((env) => setRows(env.data || []), (err) => setError(err.message));
  }, []);
  const days = lastDays(7).map((day) => {
    const r = rows.filter((x) => x.day === day);
    const sum = (k) => r.reduce((a, x) => a + (x[k] || 0), 0);
    return { day, requests: sum('request_count'), tokens: sum('prompt_tokens') + sum('completion_tokens'), quota: sum('quota') };
  });
  const max = Math.max(1, ...days.map((d) => d.requests));
  const total = (k) => days.reduce((a, d) => a + d[k], 0);
  return html`<section>
    <h1>${t('nav.dashboard')}</h1>
    <${Alert} error=${error} />
    <div class="stats">
      <div class="stat"><span>${t('dash.balance')}</span><strong id="balance">${money(user.quota, status.quota_per_unit)}</strong></div>
      <div class="stat"><span>${t('dash.used')}</span><strong>${money(user.used_quota, status.quota_per_unit)}</strong></div>
      <div class="stat"><span>${t('dash.requests7d')}</span><strong>${count(total('requests'))}</strong></div>
      <div class="stat"><span>${t('dash.tokens7d')}</span><strong>${count(total('tokens'))}</strong></div>
    </div>
    <table>
      <caption>${t('dash.last7days')}</caption>
      <thead><tr><th>${t('dash.day')}</th><th>${t('dash.requests')}</th><th>${t('dash.tokens')}</th><th>${t('dash.cost')}</th></tr></thead>
      <tbody>${days.map((d) => html`<tr key=${d.day}>
        <td>${d.day}</td>
        <td><meter min="0" max=${max} value=${d.requests} aria-hidden="true"></meter> ${count(d.requests)}</td>
        <td>${count(d.tokens)}</td><td>${money(d.quota, status.quota_per_unit)}</td>
      </tr>`)}</tbody>
    </table>
  </section>`;
}
