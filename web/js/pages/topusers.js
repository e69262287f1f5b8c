// Top users of the admin overview (GET /api/admin/dashboard/top-users):
// requests and consumption in the overview's range, balance now.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get, query } from '../api.js';
import { t } from '../i18n.js';
import { count, money } from '../format.js';
import { Alert } from '../ui.js';

export function TopUsers({ range, perUnit }) {
  const [items, setItems] = useState(null);
  const [error, setError] = useState('');
  useEffect(() => {
    setError('');
    get('/api/admin/dashboard/top-users' + query({ range, limit: 20 }))
      .then((env) => setItems(env.data.items || []), (err) => setError(err.message));
  }, [range]);
  return html`<h2 id="top-users-title">${t('topUsers.title')}</h2>
    <${Alert} error=${error} />
    ${items && html`<div class="table-scroll"><table id="top-users" aria-labelledby="top-users-title">
      <thead><tr><th>${t('topUsers.rank')}</th><th>${t('field.username')}</th><th>${t('dash.requests')}</th>
        <th>${t('topUsers.quota')}</th><th>${t('dash.balance')}</th><th>${t('topUsers.plan')}</th></tr></thead>
      <tbody>
        ${items.length === 0 && html`<tr><td colspan="6">${t('list.empty')}</td></tr>`}
        ${items.map((u, i) => html`<tr key=${u.id} data-user=${u.username}>
          <td>${i + 1}</td><td>${u.username}${u.email && html` <span class="muted">${u.email}</span>`}</td>
          <td class="requests">${count(u.request_count)}</td><td>${money(u.quota, perUnit)}</td>
          <td>${money(u.balance, perUnit)}</td><td>${u.current_plan_name || html`<span class="muted">—</span>`}</td>
        </tr>`)}
      </tbody>
    </table></div>`}`;
}
