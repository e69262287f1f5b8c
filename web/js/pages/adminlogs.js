// Every user's logs (admin): GET /api/log/ with the filters of docs/api.md
// (Logs, Filters), or GET /api/log/search when a keyword is given (a
// substring scan: the slow one, docs/performance.md); paged on the server,
// newest first. The sums of the consume logs that match come from
// GET /api/log/stat. Admin views carry the channel and the upstream's
// message (the user's /logs page does not).
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get, query } from '../api.js';
import { t } from '../i18n.js';
import { count, dateTime, fromLocalInput, money } from '../format.js';
import { Alert, Field, Pager } from '../ui.js';
import { queryParam } from '../router.js';
import { TypeSelect, logCell, useLogFilters } from './logs.js';

const PAGE_SIZE = 20;
const empty = { type: 0, username: '', model_name: '', token_name: '', channel: '', status: '', error_code: '', keyword: '', start: '', end: '' };

// params turns the applied filters into the API's query fields.
function params(f) {
  const ts = (v) => (v ? fromLocalInput(v) : '');
  return {
    type: f.type || '', username: f.username.trim(), model_name: f.model_name.trim(), token_name: f.token_name.trim(),
    channel: f.channel.trim(), status: f.status.trim(), error_code: f.error_code.trim(),
    start_timestamp: ts(f.start), end_timestamp: ts(f.end),
  };
}

export function AdminLogs({ session }) {
  const perUnit = session.status.quota_per_unit;
  const { form, set, filters, page, setPage, apply, reset } = useLogFilters(empty, { ...empty, username: queryParam('username') });
  const [list, setList] = useState({ items: [], total: 0 });
  const [stat, setStat] = useState(null);
  const [error, setError] = useState('');
  useEffect(() => {
    let live = true; // an answer for filters since replaced is dropped
    const p = params(filters);
    const kw = filters.keyword.trim();
    const path = kw ? '/api/log/search' + query({ keyword: kw, ...p, p: page, page_size: PAGE_SIZE })
      : '/api/log/' + query({ ...p, p: page, page_size: PAGE_SIZE });
    get(path).then((env) => { if (live) { setError(''); setList({ items: env.data || [], total: env.total || 0 }); } },
      (err) => live && setError(err.message));
    get('/api/log/stat' + query(p)).then((env) => live && setStat(env.data), () => live && setStat(null));
    return () => { live = false; };
  }, [page, filters]);

  return html`<section>
    <h1>${t('nav.adminLogs')}</h1>
    <${Alert} error=${error} />
    <form class="filters" id="admin-log-filters" onSubmit=${apply}>
      <${TypeSelect} id="admin-log-type" value=${form.type} onChange=${set('type')} />
      <${Field} label=${t('alogs.username')} value=${form.username} onInput=${set('username')} name="username" maxlength="64" />
      <${Field} label=${t('logs.model')} value=${form.model_name} onInput=${set('model_name')} name="model_name" maxlength="191" />
      <${Field} label=${t('logs.key')} value=${form.token_name} onInput=${set('token_name')} name="token_name" maxlength="64" />
      <${Field} label=${t('alogs.channel')} type="number" min="0" step="1" value=${form.channel} onInput=${set('channel')} name="channel" />
      <${Field} label=${t('alogs.status')} type="number" min="0" max="999" step="1" value=${form.status} onInput=${set('status')} name="status" />
      <${Field} label=${t('alogs.errorCode')} value=${form.error_code} onInput=${set('error_code')} name="error_code" maxlength="64" />
      <${Field} label=${t('alogs.keyword')} hint=${t('alogs.keywordHint')} value=${form.keyword} onInput=${set('keyword')} name="keyword" />
      <${Field} label=${t('logs.from')} type="datetime-local" value=${form.start} onInput=${set('start')} />
      <${Field} label=${t('logs.to')} type="datetime-local" value=${form.end} onInput=${set('end')} />
      <div class="actions">
        <button class="primary" type="submit">${t('logs.apply')}</button>
        <button type="button" onClick=${reset}>${t('logs.reset')}</button>
      </div>
    </form>
    ${stat && html`<p class="muted" id="admin-log-stat">${t('alogs.stat', {
      requests: count(stat.request_count), quota: money(stat.quota, perUnit),
      prompt: count(stat.prompt_tokens), completion: count(stat.completion_tokens) })}</p>`}
    <div class="table-scroll"><table id="admin-logs">
      <caption class="sr-only">${t('nav.adminLogs')}</caption>
      <thead><tr>
        <th>${t('logs.time')}</th><th>${t('alogs.username')}</th><th>${t('logs.type')}</th><th>${t('logs.key')}</th>
        <th>${t('logs.model')}</th><th>${t('alogs.channel')}</th><th>${t('logs.tokens')}</th><th>${t('logs.cost')}</th>
        <th>${t('logs.elapsed')}</th><th>${t('logs.content')}</th>
      </tr></thead>
      <tbody>
        ${list.items.length === 0 && html`<tr><td colspan="10">${t('list.empty')}</td></tr>`}
        ${list.items.map((l) => html`<tr key=${l.id} data-log=${l.id}>
          <td>${dateTime(l.created_at)}</td><td class="username">${l.username}</td>
          <td>${logCell.type(l)}</td>
          <td>${l.token_name}</td><td class="model">${l.model_name}</td><td>${l.channel_id || ''}</td>
          <td>${logCell.tokens(l)}</td><td>${logCell.cost(l, perUnit)}</td><td>${logCell.elapsed(l)}</td>
          <td class="content">${logCell.content(l)}
            ${l.upstream_message && html`<br /><small class="muted">${t('alogs.upstream')}: ${l.upstream_message}</small>`}</td>
        </tr>`)}
      </tbody>
    </table></div>
    <${Pager} page=${page} pageSize=${PAGE_SIZE} total=${list.total} onPage=${setPage} />
  </section>`;
}
