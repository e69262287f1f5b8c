// The user's own logs (GET /api/log/self): filters by type, model, key
// and time, paged on the server, newest first.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get, query } from '../api.js';
import { t } from '../i18n.js';
import { count, dateTime, fromLocalInput, money } from '../format.js';
import { Alert, Field, Pager } from '../ui.js';

const PAGE_SIZE = 20;
const TYPES = [0, 1, 2, 3, 4, 5];
const empty = { type: 0, model_name: '', token_name: '', start: '', end: '' };

// useLogFilters keeps a log page's filter form apart from the filters its
// list shows: typing changes the form, apply moves it to the list (from
// page 0), reset clears both. The admin logs page uses it too.
export function useLogFilters(blank, initial = blank) {
  const [form, setForm] = useState(initial);
  const [filters, setFilters] = useState(initial);
  const [page, setPage] = useState(0);
  const set = (k) => (v) => setForm({ ...form, [k]: v });
  const apply = (e) => {
    e.preventDefault();
    setPage(0);
    setFilters({ ...form });
  };
  const reset = () => { setForm(blank); setPage(0); setFilters(blank); };
  return { form, set, filters, page, setPage, apply, reset };
}

// TypeSelect picks a log type (0 = every type).
export function TypeSelect({ id, value, onChange }) {
  return html`<div class="field">
    <label for=${id}>${t('logs.type')}</label>
    <select id=${id} value=${value} onChange=${(e) => onChange(Number(e.currentTarget.value))}>
      ${TYPES.map((n) => html`<option value=${n} selected=${n === value}>${t('logs.type' + n)}</option>`)}
    </select>
  </div>`;
}

// The cells both log tables show alike.
export const logCell = {
  type: (l) => html`<span class=${'badge t' + l.type}>${t('logs.type' + l.type)}</span>${l.status ? ' ' + l.status : ''}`,
  tokens: (l) => (l.prompt_tokens || l.completion_tokens ? `${count(l.prompt_tokens)} / ${count(l.completion_tokens)}` : ''),
  cost: (l, perUnit) => html`${l.quota ? money(l.quota, perUnit) : ''}${l.billing_source === 1 ? html` <small class="muted">${t('logs.bySub')}</small>` : ''}`,
  elapsed: (l) => (l.elapsed_time ? `${count(l.elapsed_time)} ms` : ''),
  content: (l) => html`${l.error_code ? html`<code>${l.error_code}</code> ` : ''}${l.content}`,
};

export function Logs({ session }) {
  const perUnit = session.status.quota_per_unit;
  const { form, set, filters, page, setPage, apply, reset } = useLogFilters(empty);
  const [list, setList] = useState({ items: [], total: 0 });
  const [error, setError] = useState('');
  useEffect(() => {
    const ts = (v) => (v ? fromLocalInput(v) : '');
    get('/api/log/self' + query({
      p: page, page_size: PAGE_SIZE, type: filters.type || '', model_name: filters.model_name.trim(),
      token_name: filters.token_name.trim(), start_timestamp: ts(filters.start), end_timestamp: ts(filters.end),
    })).then((env) => { setError(''); setList({ items: env.data || [], total: env.total || 0 }); },
      (err) => setError(err.message));
  }, [page, filters]);

  return html`<section>
    <h1>${t('nav.logs')}</h1>
    <${Alert} error=${error} />
    <form class="filters" id="log-filters" onSubmit=${apply}>
      <${TypeSelect} id="log-type" value=${form.type} onChange=${set('type')} />
      <${Field} label=${t('logs.model')} value=${form.model_name} onInput=${set('model_name')} name="model_name" />
      <${Field} label=${t('logs.key')} value=${form.token_name} onInput=${set('token_name')} name="token_name" />
      <${Field} label=${t('logs.from')} type="datetime-local" value=${form.start} onInput=${set('start')} />
      <${Field} label=${t('logs.to')} type="datetime-local" value=${form.end} onInput=${set('end')} />
      <div class="actions">
        <button class="primary" type="submit">${t('logs.apply')}</button>
        <button type="button" onClick=${reset}>${t('logs.reset')}</button>
      </div>
    </form>
    <div class="table-scroll"><table id="logs">
      <caption class="sr-only">${t('nav.logs')}</caption>
      <thead><tr>
        <th>${t('logs.time')}</th><th>${t('logs.type')}</th><th>${t('logs.key')}</th><th>${t('logs.model')}</th>
        <th>${t('logs.tokens')}</th><th>${t('logs.cost')}</th><th>${t('logs.elapsed')}</th><th>${t('logs.content')}</th>
      </tr></thead>
      <tbody>
        ${list.items.length === 0 && html`<tr><td colspan="8">${t('list.empty')}</td></tr>`}
        ${list.items.map((l) => html`<tr key=${l.id}>
          <td>${dateTime(l.created_at)}</td>
          <td>${logCell.type(l)}</td>
          <td>${l.token_name}</td><td>${l.model_name}</td>
          <td>${logCell.tokens(l)}</td><td>${logCell.cost(l, perUnit)}</td><td>${logCell.elapsed(l)}</td>
          <td class="content">${logCell.content(l)}</td>
        </tr>`)}
      </tbody>
    </table></div>
    <${Pager} page=${page} pageSize=${PAGE_SIZE} total=${list.total} onPage=${setPage} />
  </section>`;
}
