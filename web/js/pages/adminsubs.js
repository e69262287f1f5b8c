// Every user's subscriptions (admin: docs/api.md Subscriptions): paged
// list with search (username or plan name), grant one to a user, cancel
// (status 3), edit the end, status, billing type and notes, delete.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { del, get, post, put } from '../api.js';
import { t } from '../i18n.js';
import { dateTime, fromLocalInput, toLocalInput } from '../format.js';
import { Alert, Field, Pager, notify, rowClass, useFlash } from '../ui.js';
import { queryParam } from '../router.js';
import { SearchBox, Select, TextArea, runner, usePaged } from './adminui.js';

const PAGE_SIZE = 20;

export function AdminSubs() {
  const [error, setError] = useState('');
  const [edit, setEdit] = useState(null); // null, {} (grant) or a subscription
  const [plans, setPlans] = useState([]);
  const { page, setPage, list, load, search, keyword } = usePaged('/api/subscription/', PAGE_SIZE, setError, queryParam('keyword'));
  const run = runner(setError);
  const [flashed, flash] = useFlash();
  // Any plan may be granted, listed or not; 100 is the API's page limit.
  useEffect(() => { get('/api/plan/?page_size=100').then((env) => setPlans(env.data || []), (err) => setError(err.message)); }, []);
  const cancel = (s) => confirm(t('asubs.confirmCancel', { id: s.id, user: s.username })) &&
    run(async () => { await put('/api/subscription/', { id: s.id, status: 3 }); await load(); });
  const remove = (s) => confirm(t('asubs.confirmDelete', { id: s.id, user: s.username })) &&
    run(async () => { await del(`/api/subscription/${s.id}`); await load(); });
  const done = (s) => { setEdit(null); load(); notify(t('saved.sub', { id: s?.id ?? '' })); flash(s?.id ?? null); };

  return html`<section>
    <h1>${t('nav.adminSubs')}</h1>
    <${Alert} error=${error} />
    <${SearchBox} onSearch=${search} initial=${keyword} />
    ${edit
      ? (edit.id
        ? html`<${EditForm} sub=${edit} onCancel=${() => setEdit(null)} onSaved=${done} />`
        : html`<${GrantForm} plans=${plans} onCancel=${() => setEdit(null)} onSaved=${done} />`)
      : html`<button class="primary" type="button" id="sub-new" onClick=${() => { setError(''); setEdit({}); }}>${t('asubs.create')}</button>`}
    <div class="table-scroll"><table id="admin-subs">
      <caption class="sr-only">${t('nav.adminSubs')}</caption>
      <thead><tr><th>ID</th><th>${t('field.username')}</th><th>${t('asubs.plan')}</th><th>${t('asubs.start')}</th>
        <th>${t('asubs.end')}</th><th>${t('keys.status')}</th><th>${t('asubs.billing')}</th><th>${t('asubs.order')}</th>
        <th>${t('asubs.notes')}</th><th>${t('keys.actions')}</th></tr></thead>
      <tbody>
        ${list.items.length === 0 && html`<tr><td colspan="10">${t('list.empty')}</td></tr>`}
        ${list.items.map((s) => html`<tr key=${s.id} data-sub=${s.id} data-user=${s.username} class=${rowClass(flashed, s.id)}>
          <td>${s.id}</td><td>${s.username || s.user_id}</td><td class="plan">${s.plan_name || html`<span class="muted">${t('subs.planGone')}</span>`}</td>
          <td>${dateTime(s.start_time)}</td><td>${dateTime(s.end_time)}</td>
          <td><span class=${'badge s' + s.status}>${t('subs.status' + s.status)}</span></td>
          <td>${t('asubs.billing_' + s.billing_type)}</td><td>${s.order_id || ''}</td><td>${s.notes}</td>
          <td class="actions">
            ${s.status === 1 && html`<button type="button" class="cancel-sub" onClick=${() => cancel(s)}>${t('asubs.cancel')}</button>`}
            <button type="button" class="edit" onClick=${() => { setError(''); setEdit(s); }}>${t('action.edit')}</button>
            <button type="button" class="danger" onClick=${() => remove(s)}>${t('action.delete')}</button>
          </td>
        </tr>`)}
      </tbody>
    </table></div>
    <${Pager} page=${page} pageSize=${PAGE_SIZE} total=${list.total} onPage=${setPage} />
  </section>`;
}

const billingOptions = () => [['token', t('asubs.billing_token')], ['request', t('asubs.billing_request')]];

// save sends one write and shows its failure in the form.
async function save(setError, f, onSaved) {
  setError('');
  try {
    const env = await f();
    onSaved(env.data);
  } catch (err) {
    setError(err.message);
  }
}

function GrantForm({ plans, onSaved, onCancel }) {
  const [f, setF] = useState({ user_id: '', plan_id: plans[0] ? String(plans[0].id) : '', billing_type: 'token', duration_days: '0', notes: '' });
  const [error, setError] = useState('');
  const set = (k) => (v) => setF({ ...f, [k]: v });
  const submit = (e) => {
    e.preventDefault();
    save(setError, () => post('/api/subscription/', {
      ...f, user_id: Number(f.user_id), plan_id: Number(f.plan_id), duration_days: Number(f.duration_days || 0),
    }), onSaved);
  };
  return html`<form class="card narrow" id="sub-form" onSubmit=${submit} aria-labelledby="subform-title">
    <h2 id="subform-title">${t('asubs.create')}</h2>
    <${Alert} error=${error} />
    <${Field} label=${t('aorders.userID')} type="number" min="1" step="1" name="user_id" value=${f.user_id} onInput=${set('user_id')} required />
    <${Select} label=${t('asubs.plan')} name="plan_id" value=${f.plan_id} onInput=${set('plan_id')}
      options=${plans.map((p) => [String(p.id), `${p.name} (${t('plans.days', { n: p.duration_days })})`])} required />
    <${Field} label=${t('asubs.days')} hint=${t('asubs.daysHint')} type="number" max="3650" step="1" name="duration_days" value=${f.duration_days} onInput=${set('duration_days')} />
    <${Select} label=${t('asubs.billing')} name="billing_type" value=${f.billing_type} onInput=${set('billing_type')} options=${billingOptions()} />
    <${TextArea} label=${t('asubs.notes')} name="notes" rows="2" maxlength="500" value=${f.notes} onInput=${set('notes')} />
    <div class="actions">
      <button class="primary" type="submit">${t('asubs.grant')}</button>
      <button type="button" onClick=${onCancel}>${t('action.cancel')}</button>
    </div>
  </form>`;
}

function EditForm({ sub, onSaved, onCancel }) {
  const [f, setF] = useState({ end: toLocalInput(sub.end_time), status: String(sub.status), billing_type: sub.billing_type, notes: sub.notes });
  const [error, setError] = useState('');
  const set = (k) => (v) => setF({ ...f, [k]: v });
  const submit = (e) => {
    e.preventDefault();
    const body = { id: sub.id, status: Number(f.status), billing_type: f.billing_type, notes: f.notes };
    // Minutes are all the input shows: an untouched end keeps its seconds.
    if (f.end !== toLocalInput(sub.end_time)) body.end_time = fromLocalInput(f.end);
    save(setError, () => put('/api/subscription/', body), onSaved);
  };
  return html`<form class="card narrow" id="sub-form" onSubmit=${submit} aria-labelledby="subform-title">
    <h2 id="subform-title">${t('asubs.edit', { id: sub.id, user: sub.username })}</h2>
    <${Alert} error=${error} />
    <${Field} label=${t('asubs.end')} type="datetime-local" name="end_time" value=${f.end} onInput=${set('end')} required />
    <${Select} label=${t('keys.status')} name="status" value=${f.status} onInput=${set('status')}
      options=${[1, 2, 3].map((s) => [String(s), t('subs.status' + s)])} />
    <${Select} label=${t('asubs.billing')} name="billing_type" value=${f.billing_type} onInput=${set('billing_type')} options=${billingOptions()} />
    <${TextArea} label=${t('asubs.notes')} name="notes" rows="2" maxlength="500" value=${f.notes} onInput=${set('notes')} />
    <div class="actions">
      <button class="primary" type="submit">${t('action.save')}</button>
      <button type="button" onClick=${onCancel}>${t('action.cancel')}</button>
    </div>
  </form>`;
}
