// Plans (admins read, root writes: docs/api.md Plans). model_limits is
// edited as a table, one row per model, and sent as the JSON object the
// API stores; the server checks every rule and its message is shown.
import { useState } from 'preact/hooks';
import { html } from '../html.js';
import { del, post, put } from '../api.js';
import { t } from '../i18n.js';
import { Alert, Field, Pager, notify, rowClass, useFlash } from '../ui.js';
import { SearchBox, Select, TextArea, runner, usePaged } from './adminui.js';
import { yuan } from './pay.js';

const PAGE_SIZE = 20;
const ROOT = 100;

// limitFields are a ModelLimitRule's counters besides period_h, in the
// order docs/api.md lists them.
export const limitFields = ['request_period', 'request_week', 'request_month', 'token_period', 'token_week', 'token_month'];

export function AdminPlans({ session }) {
  const [error, setError] = useState('');
  const [edit, setEdit] = useState(null); // null, {} (new) or a plan
  const { page, setPage, list, load, search } = usePaged('/api/plan/', PAGE_SIZE, setError);
  const run = runner(setError);
  const [flashed, flash] = useFlash();
  const root = session.user.role >= ROOT;
  const remove = (p) => confirm(t('aplans.confirmDelete', { name: p.name })) &&
    run(async () => { await del(`/api/plan/${p.id}`); await load(); });

  return html`<section>
    <h1>${t('nav.adminPlans')}</h1>
    <${Alert} error=${error} />
    <${SearchBox} onSearch=${search} />
    ${root && (edit
      ? html`<${PlanForm} initial=${edit.id ? edit : null} onCancel=${() => setEdit(null)} onSaved=${(p) => { setEdit(null); load(); notify(t('saved.plan', { name: p.name })); flash(p.id); }} />`
      : html`<button class="primary" type="button" id="plan-new" onClick=${() => { setError(''); setEdit({}); }}>${t('aplans.create')}</button>`)}
    <div class="table-scroll"><table id="admin-plans">
      <caption class="sr-only">${t('nav.adminPlans')}</caption>
      <thead><tr><th>ID</th><th>${t('keys.name')}</th><th>${t('plans.amount')}</th><th>${t('aplans.duration')}</th>
        <th>${t('aplans.models')}</th><th>${t('aplans.defaultModel')}</th><th>${t('keys.status')}</th><th>${t('keys.actions')}</th></tr></thead>
      <tbody>
        ${list.items.length === 0 && html`<tr><td colspan="8">${t('list.empty')}</td></tr>`}
        ${list.items.map((p) => html`<tr key=${p.id} data-plan=${p.name} class=${rowClass(flashed, p.id)}>
          <td>${p.id}</td><td>${p.name}${p.recommended && html` <span class="badge s1">${t('plans.recommended')}</span>`}</td>
          <td>${yuan(p.price)}</td><td>${t('plans.days', { n: p.duration_days })}</td>
          <td class="limits">${Object.keys(parseLimits(p.model_limits)).join(', ')}</td><td>${p.default_model}</td>
          <td><span class=${'badge s' + (p.status === 1 ? 1 : 2)}>${t('aplans.status' + p.status)}</span></td>
          <td class="actions">${root && html`
            <button type="button" class="edit" onClick=${() => { setError(''); setEdit(p); }}>${t('action.edit')}</button>
            <button type="button" class="danger" onClick=${() => remove(p)}>${t('action.delete')}</button>`}</td>
        </tr>`)}
      </tbody>
    </table></div>
    <${Pager} page=${page} pageSize=${PAGE_SIZE} total=${list.total} onPage=${setPage} />
  </section>`;
}

function parseLimits(text) {
  try {
    const v = JSON.parse(text || '{}');
    return v && typeof v === 'object' ? v : {};
  } catch {
    return {};
  }
}

// toRows turns the stored model_limits into editable rows (strings, so an
// empty cell means "no limit"); toLimits is the reverse. Numbers are
// sent as typed: the server refuses fractions and negatives by name.
const toRows = (text) => Object.entries(parseLimits(text)).map(([model, r]) => {
  const row = { model, period_h: String(r.period_h ?? 5) };
  for (const k of limitFields) row[k] = r[k] ? String(r[k]) : '';
  return row;
});

export function toLimits(rows) {
  const out = {};
  for (const row of rows) {
    const rule = { period_h: Number(row.period_h || 5) };
    for (const k of limitFields) if (row[k] !== '') rule[k] = Number(row[k]);
    out[row.model.trim()] = rule;
  }
  return out;
}

const emptyRow = () => ({ model: '', period_h: '5', ...Object.fromEntries(limitFields.map((k) => [k, ''])) });

function PlanForm({ initial, onSaved, onCancel }) {
  const [f, setF] = useState({
    name: initial?.name ?? '', price: String(initial?.price ?? 0), tokens: String(initial?.tokens ?? 0),
    duration_days: String(initial?.duration_days ?? 30), duration_text: initial?.duration_text ?? '',
    default_model: initial?.default_model ?? '', description: initial?.description ?? '',
    features: (initial?.features ?? []).join('\n'), sort: String(initial?.sort ?? 0),
    status: String(initial?.status ?? 1), recommended: Boolean(initial?.recommended),
  });
  const [rows, setRows] = useState(() => toRows(initial?.model_limits));
  const [error, setError] = useState('');
  const set = (k) => (v) => setF({ ...f, [k]: v });
  const setCell = (i, k, v) => setRows(rows.map((r, j) => (j === i ? { ...r, [k]: v } : r)));
  const models = rows.map((r) => r.model.trim()).filter(Boolean);
  const submit = async (e) => {
    e.preventDefault();
    setError('');
    const body = {
      ...f, price: Number(f.price), tokens: Number(f.tokens || 0), duration_days: Number(f.duration_days),
      sort: Number(f.sort || 0), status: Number(f.status), model_limits: JSON.stringify(toLimits(rows)),
    };
    try {
      const env = initial ? await put('/api/plan/', { id: initial.id, ...body }) : await post('/api/plan/', body);
      onSaved({ id: env.data?.id ?? initial?.id, name: f.name });
    } catch (err) {
      setError(err.message);
    }
  };
  return html`<form class="card" id="plan-form" onSubmit=${submit} aria-labelledby="planform-title">
    <h2 id="planform-title">${initial ? t('aplans.edit') : t('aplans.create')}</h2>
    <${Alert} error=${error} />
    <${Field} label=${t('keys.name')} name="name" value=${f.name} onInput=${set('name')} maxlength="64" required />
    <${Field} label=${t('aplans.price')} type="number" min="0" step="0.01" name="price" value=${f.price} onInput=${set('price')} required />
    <${Field} label=${t('aplans.durationDays')} type="number" min="1" max="3650" step="1" name="duration_days" value=${f.duration_days} onInput=${set('duration_days')} required />
    <${Field} label=${t('aplans.durationText')} name="duration_text" value=${f.duration_text} onInput=${set('duration_text')} maxlength="64" />
    <${Field} label=${t('aplans.tokens')} hint=${t('aplans.tokensHint')} type="number" min="0" step="1" name="tokens" value=${f.tokens} onInput=${set('tokens')} />
    <fieldset class="limits-editor">
      <legend>${t('aplans.modelLimits')}</legend>
      <p class="muted">${t('aplans.limitsHint')}</p>
      <div class="scroll"><table id="plan-limits">
        <thead><tr><th>${t('prices.model')}</th><th>${t('aplans.periodH')}</th>
          ${limitFields.map((k) => html`<th>${t('subs.limit.' + k)}</th>`)}<th><span class="sr-only">${t('keys.actions')}</span></th></tr></thead>
        <tbody>
          ${rows.map((r, i) => html`<tr key=${i}>
            <td><input name="model" aria-label=${t('aplans.rowModel', { n: i + 1 })} value=${r.model} maxlength="191" required
              onInput=${(e) => setCell(i, 'model', e.currentTarget.value)} /></td>
            <td><input name="period_h" type="number" min="1" max="720" step="1" aria-label=${t('aplans.rowField', { n: i + 1, field: t('aplans.periodH') })}
              value=${r.period_h} onInput=${(e) => setCell(i, 'period_h', e.currentTarget.value)} /></td>
            ${limitFields.map((k) => html`<td><input name=${k} type="number" min="0" step="1"
              aria-label=${t('aplans.rowField', { n: i + 1, field: t('subs.limit.' + k) })}
              value=${r[k]} onInput=${(e) => setCell(i, k, e.currentTarget.value)} /></td>`)}
            <td><button type="button" class="danger remove-row" onClick=${() => setRows(rows.filter((_, j) => j !== i))}>
              ${t('aplans.removeRow', { n: i + 1 })}</button></td>
          </tr>`)}
        </tbody>
      </table></div>
      <button type="button" id="plan-add-row" onClick=${() => setRows([...rows, emptyRow()])}>${t('aplans.addRow')}</button>
    </fieldset>
    <${Select} label=${t('aplans.defaultModel')} name="default_model" value=${f.default_model} onInput=${set('default_model')}
      options=${[['', t('aplans.noDefault')], ...models.map((m) => [m, m])]} />
    <${TextArea} label=${t('aplans.description')} name="description" rows="2" maxlength="2000" value=${f.description} onInput=${set('description')} />
    <${TextArea} label=${t('aplans.features')} hint=${t('aplans.featuresHint')} name="features" rows="3" value=${f.features} onInput=${set('features')} />
    <${Field} label=${t('aplans.sort')} type="number" step="1" name="sort" value=${f.sort} onInput=${set('sort')} />
    <${Select} label=${t('keys.status')} name="status" value=${f.status} onInput=${set('status')}
      options=${[['1', t('aplans.status1')], ['0', t('aplans.status0')]]} />
    <${Field} label=${t('plans.recommended')} type="checkbox" name="recommended" value=${f.recommended} onInput=${set('recommended')} />
    <div class="actions">
      <button class="primary" type="submit">${t('action.save')}</button>
      <button type="button" onClick=${onCancel}>${t('action.cancel')}</button>
    </div>
  </form>`;
}
