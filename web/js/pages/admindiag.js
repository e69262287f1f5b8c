// Subscription diagnostics (admin, read-only: GET /api/diag/subscriptions):
// the first 100 subscriptions as stored, each with its source order and
// user, so a subscription without a plan, order or user stands out.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get } from '../api.js';
import { t } from '../i18n.js';
import { dateTime } from '../format.js';
import { Alert } from '../ui.js';

export function AdminDiag() {
  const [error, setError] = useState('');
  const [d, setD] = useState(null);
  const load = () => get('/api/diag/subscriptions').then((env) => { setError(''); setD(env.data); }, (err) => setError(err.message));
  useEffect(() => { load(); }, []);

  return html`<section>
    <h1>${t('nav.adminDiag')}</h1>
    <${Alert} error=${error} />
    <button type="button" id="diag-refresh" onClick=${load}>${t('diag.refresh')}</button>
    ${d && html`<p id="diag-summary">${t('diag.summary', { n: d.total_user_plans, missing: d.missing_plan_id })}</p>
    <div class="table-scroll"><table id="diag-rows">
      <caption class="sr-only">${t('nav.adminDiag')}</caption>
      <thead><tr><th>ID</th><th>${t('field.username')}</th><th>${t('diag.planID')}</th><th>${t('asubs.end')}</th>
        <th>${t('diag.storedStatus')}</th><th>${t('plans.orderNo')}</th><th>${t('diag.orderPlan')}</th><th>${t('orders.type')}</th></tr></thead>
      <tbody>
        ${d.rows.length === 0 && html`<tr><td colspan="8">${t('list.empty')}</td></tr>`}
        ${d.rows.map((r) => {
          const s = r.user_plan;
          const mismatch = r.order_no && r.order_plan_id !== s.plan_id;
          return html`<tr key=${s.id}>
            <td>${s.id}</td>
            <td>${r.user ? r.user.username : html`<strong class="warn">${t('diag.noUser', { id: s.user_id })}</strong>`}</td>
            <td>${s.plan_id > 0 ? s.plan_id : html`<strong class="warn">${s.plan_id}</strong>`}</td>
            <td>${dateTime(s.end_time)}</td><td>${t('subs.status' + s.status)}</td>
            <td>${s.order_id === 0 ? html`<span class="muted">${t('diag.granted')}</span>`
              : r.order_no ? html`<code>${r.order_no}</code>` : html`<strong class="warn">${t('diag.noOrder', { id: s.order_id })}</strong>`}</td>
            <td>${mismatch ? html`<strong class="warn">${r.order_plan_id}</strong>` : r.order_plan_id || ''}</td>
            <td>${r.order_type ? t('orders.type' + r.order_type) : ''}</td>
          </tr>`;
        })}
      </tbody>
    </table></div>`}
  </section>`;
}
