// The user's active subscriptions (GET /api/subscription/self), each with
// a usage bar per model and limit and when its window frees up; one
// subscription re-reads its usage with GET /api/subscription/{id}/usage.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get } from '../api.js';
import { t } from '../i18n.js';
import { count, dateTime } from '../format.js';
import { Alert } from '../ui.js';
import { Link } from '../router.js';

// windowText says how long a limit's rolling window is.
function windowText(l) {
  if (l.name === 'tokens') return t('subs.lifetime');
  return l.window_hours % 24 === 0 ? t('subs.windowDays', { n: l.window_hours / 24 }) : t('subs.windowHours', { n: l.window_hours });
}

function Limit({ l }) {
  const pct = l.limit > 0 ? Math.min(100, Math.round((l.used / l.limit) * 100)) : 0;
  return html`<tr class="limit">
    <td>${t('subs.limit.' + l.name)} <small class="muted">${windowText(l)}</small></td>
    <td><meter min="0" max=${l.limit} low=${l.limit * 0.7} high=${l.limit * 0.9} optimum="0" value=${l.used}
      aria-label=${t('subs.usedOf', { used: count(l.used), limit: count(l.limit) })}></meter>
      ${' '}${count(l.used)} / ${count(l.limit)} (${pct}%)</td>
    <td>${count(l.remaining)}</td>
    <td>${l.reset_time > 0 ? dateTime(l.reset_time) : l.name === 'tokens' ? t('subs.neverFrees') : t('subs.nothingUsed')}</td>
  </tr>`;
}

function Subscription({ initial }) {
  const [s, setS] = useState(initial);
  const [error, setError] = useState('');
  const refresh = () => get(`/api/subscription/${s.id}/usage`).then((env) => { setError(''); setS(env.data); }, (err) => setError(err.message));
  return html`<article class="card sub" id=${'sub-' + s.id}>
    <h2>${s.plan_name || t('subs.planGone')} <span class=${'badge s' + s.status}>${t('subs.status' + s.status)}</span></h2>
    <p class="muted">${t('subs.period', { start: dateTime(s.start_time), end: dateTime(s.end_time) })}
      · ${t('subs.lifetimeUse', { requests: count(s.lifetime_requests), tokens: count(s.lifetime_tokens) })}</p>
    <${Alert} error=${error} />
    ${(s.models || []).length === 0 && html`<p>${t('subs.noLimits')}</p>`}
    ${(s.models || []).map((m) => html`<div class="table-scroll" key=${m.model}><table>
      <caption>${m.model}${!m.listed ? html` <small class="muted">${t('subs.unlisted')}</small>` : ''}</caption>
      <thead><tr><th>${t('subs.limit')}</th><th>${t('subs.used')}</th><th>${t('subs.remaining')}</th><th>${t('subs.frees')}</th></tr></thead>
      <tbody>
        ${m.limits.length === 0 && html`<tr><td colspan="4">${t('subs.unlimited')}</td></tr>`}
        ${m.limits.map((l) => html`<${Limit} key=${l.name} l=${l} />`)}
      </tbody>
    </table></div>`)}
    <button type="button" onClick=${refresh}>${t('subs.refresh')}</button>
  </article>`;
}

export function Subscriptions() {
  const [subs, setSubs] = useState(null);
  const [error, setError] = useState('');
  useEffect(() => { get('/api/subscription/self').then((env) => setSubs(env.data || []), (err) => setError(err.message)); }, []);
  return html`<section>
    <h1>${t('nav.subscriptions')}</h1>
    <${Alert} error=${error} />
    ${subs === null && !error && html`<p aria-busy="true">${t('ui.loading')}</p>`}
    ${subs && subs.length === 0 && html`<p>${t('subs.none')} <${Link} href="/plans">${t('subs.buy')}<//></p>`}
    ${subs && subs.map((s) => html`<${Subscription} key=${s.id} initial=${s} />`)}
  </section>`;
}
