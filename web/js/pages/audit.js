// The audit trail (root): GET /api/audit/ with its filters (who acted, the
// action, the target, a time range), newest first, paged on the server.
// Each entry's detail (request, before, after; secrets already masked by
// the server) opens in place.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get, query } from '../api.js';
import { t } from '../i18n.js';
import { dateTime, fromLocalInput } from '../format.js';
import { Alert, Field, Pager } from '../ui.js';
import { useLogFilters } from './logs.js';

const PAGE_SIZE = 20;
const empty = { username: '', action: '', target: '', start: '', end: '' };

function params(f) {
  const ts = (v) => (v ? fromLocalInput(v) : '');
  return { username: f.username.trim(), action: f.action.trim(), target: f.target.trim(),
    start_timestamp: ts(f.start), end_timestamp: ts(f.end) };
}

export function Audit() {
  const { form, set, filters, page, setPage, apply, reset } = useLogFilters(empty);
  const [list, setList] = useState({ items: [], total: 0 });
  const [error, setError] = useState('');
  useEffect(() => {
    let live = true;
    get('/api/audit/' + query({ ...params(filters), p: page, page_size: PAGE_SIZE }))
      .then((env) => { if (live) { setError(''); setList({ items: env.data || [], total: env.total || 0 }); } },
        (err) => live && setError(err.message));
    return () => { live = false; };
  }, [page, filters]);

  return html`<section>
    <h1>${t('nav.audit')}</h1>
    <p class="muted">${t('audit.hint')}</p>
    <${Alert} error=${error} />
    <form class="filters" id="audit-filters" onSubmit=${apply}>
      <${Field} label=${t('alogs.username')} value=${form.username} onInput=${set('username')} name="username" maxlength="64" />
      <${Field} label=${t('audit.action')} value=${form.action} onInput=${set('action')} name="action" maxlength="128" />
      <${Field} label=${t('audit.target')} value=${form.target} onInput=${set('target')} name="target" maxlength="191" />
      <${Field} label=${t('logs.from')} type="datetime-local" value=${form.start} onInput=${set('start')} />
      <${Field} label=${t('logs.to')} type="datetime-local" value=${form.end} onInput=${set('end')} />
      <div class="actions">
        <button class="primary" type="submit">${t('logs.apply')}</button>
        <button type="button" onClick=${reset}>${t('logs.reset')}</button>
      </div>
    </form>
    <div class="table-scroll"><table id="audit-log">
      <caption class="sr-only">${t('nav.audit')}</caption>
      <thead><tr>
        <th>${t('logs.time')}</th><th>${t('alogs.username')}</th><th>${t('audit.ip')}</th>
        <th>${t('audit.action')}</th><th>${t('audit.target')}</th><th>${t('audit.detail')}</th>
      </tr></thead>
      <tbody>
        ${list.items.length === 0 && html`<tr><td colspan="6">${t('list.empty')}</td></tr>`}
        ${list.items.map((a) => html`<tr key=${a.id} data-audit=${a.id}>
          <td>${dateTime(a.created_at)}</td><td class="username">${a.username}</td><td>${a.ip}</td>
          <td class="action"><code>${a.action}</code></td><td class="target">${a.target}</td>
          <td class="content"><details><summary>${t('audit.show')}</summary>
            <pre>${JSON.stringify(a.detail, null, 2)}</pre></details></td>
        </tr>`)}
      </tbody>
    </table></div>
    <${Pager} page=${page} pageSize=${PAGE_SIZE} total=${list.total} onPage=${setPage} />
  </section>`;
}
