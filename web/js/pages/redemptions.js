// Redemption codes (admin): batch create (the new codes shown with "copy
// all" and a CSV download), the server-paged list with search,
// enable/disable, delete, and the page's rows as CSV. The CSV is built in
// the browser from what the page already has: no export endpoint.
import { useState } from 'preact/hooks';
import { html } from '../html.js';
import { del, post, put } from '../api.js';
import { t } from '../i18n.js';
import { dateTime, money } from '../format.js';
import { Alert, CopyButton, Field, Pager, notify, rowClass, useFlash } from '../ui.js';
import { SearchBox, runner, usePaged } from './adminui.js';

const PAGE_SIZE = 20;

// csv quotes every cell (RFC 4180) and leads formula characters with a
// quote, so a spreadsheet never runs a code or a name as a formula.
export function csv(rows) {
  const cell = (v) => {
    let s = String(v ?? '');
    if (/^[=+\-@\t\r]/.test(s)) s = "'" + s;
    return '"' + s.replaceAll('"', '""') + '"';
  };
  return rows.map((r) => r.map(cell).join(',')).join('\r\n') + '\r\n';
}

function download(name, text) {
  const url = URL.createObjectURL(new Blob(['\ufeff' + text], { type: 'text/csv;charset=utf-8' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function Redemptions({ session }) {
  const perUnit = session.status.quota_per_unit;
  const [error, setError] = useState('');
  const [created, setCreated] = useState(null); // {name, amount, keys}
  const { page, setPage, list, load, search } = usePaged('/api/redemption/', PAGE_SIZE, setError);
  const run = runner(setError);
  const [flashed, flash] = useFlash();
  const toggle = (c) => run(async () => {
    await put('/api/redemption/?status_only=1', { id: c.id, status: c.status === 1 ? 2 : 1 });
    await load();
    notify(t('saved.code', { name: c.name }));
    flash(c.id);
  });
  const remove = (c) => confirm(t('redemptions.confirmDelete', { name: c.name })) &&
    run(async () => { await del(`/api/redemption/${c.id}`); await load(); });
  const exportPage = () => download('redemption-codes.csv', csv([
    ['id', 'name', 'key', 'status', 'quota', 'amount_cny', 'created_time', 'redeemed_time', 'used_user_id'],
    ...list.items.map((c) => [c.id, c.name, c.key, c.status, c.quota, c.quota / perUnit, c.created_time, c.redeemed_time, c.used_user_id]),
  ]));

  return html`<section>
    <h1>${t('nav.redemptions')}</h1>
    <${Alert} error=${error} />
    <${BatchForm} perUnit=${perUnit} onCreated=${(c) => { setCreated(c); load(); notify(t('redemptions.created', { n: c.keys.length, amount: c.amount })); }} />
    ${created && html`<div class="card created" id="created-codes" role="status">
      <p>${t('redemptions.created', { n: created.keys.length, amount: created.amount })}</p>
      <pre>${created.keys.join('\n')}</pre>
      <div class="actions">
        <${CopyButton} text=${created.keys.join('\n')} />
        <button type="button" onClick=${() => download(`${created.name}.csv`, csv([['name', 'key', 'amount_cny'], ...created.keys.map((k) => [created.name, k, created.amount])]))}>
          ${t('redemptions.csv')}</button>
        <button type="button" onClick=${() => setCreated(null)}>${t('action.close')}</button>
      </div>
    </div>`}
    <${SearchBox} onSearch=${search} />
    <button type="button" id="codes-csv" onClick=${exportPage} disabled=${list.items.length === 0}>${t('redemptions.csvPage')}</button>
    <div class="table-scroll"><table id="codes">
      <caption class="sr-only">${t('nav.redemptions')}</caption>
      <thead><tr><th>ID</th><th>${t('keys.name')}</th><th>${t('redeem.code')}</th><th>${t('keys.status')}</th>
        <th>${t('redemptions.amount')}</th><th>${t('redemptions.createdAt')}</th><th>${t('redemptions.redeemedAt')}</th><th>${t('keys.actions')}</th></tr></thead>
      <tbody>
        ${list.items.length === 0 && html`<tr><td colspan="8">${t('list.empty')}</td></tr>`}
        ${list.items.map((c) => html`<tr key=${c.id} class=${created?.keys.includes(c.key) ? 'saved' : rowClass(flashed, c.id)}>
          <td>${c.id}</td><td>${c.name}</td><td><code>${c.key}</code></td>
          <td><span class=${'badge s' + c.status}>${t('redemptions.status' + c.status)}</span></td>
          <td>${money(c.quota, perUnit)}</td><td>${dateTime(c.created_time)}</td>
          <td>${c.redeemed_time ? html`${dateTime(c.redeemed_time)} <small class="muted">#${c.used_user_id}</small>` : ''}</td>
          <td class="actions">
            ${c.status !== 3 && html`<button type="button" onClick=${() => toggle(c)}>${c.status === 1 ? t('action.disable') : t('action.enable')}</button>`}
            <button type="button" class="danger" onClick=${() => remove(c)}>${t('action.delete')}</button>
          </td></tr>`)}
      </tbody>
    </table></div>
    <${Pager} page=${page} pageSize=${PAGE_SIZE} total=${list.total} onPage=${setPage} />
  </section>`;
}

function BatchForm({ perUnit, onCreated }) {
  const [f, setF] = useState({ name: '', amount: '', count: '1' });
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const set = (k) => (v) => setF({ ...f, [k]: v });
  const submit = async (e) => {
    e.preventDefault();
    setError('');
    setBusy(true);
    try {
      const env = await post('/api/redemption/', { name: f.name, quota: Math.round(Number(f.amount) * perUnit), count: Number(f.count) });
      onCreated({ name: f.name, amount: f.amount, keys: env.data || [] });
    } catch (err) {
      setError(err.message);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="card" id="codes-form" onSubmit=${submit} aria-labelledby="codes-title">
    <h2 id="codes-title">${t('redemptions.create')}</h2>
    <${Alert} error=${error} />
    <${Field} label=${t('keys.name')} name="name" maxlength="20" value=${f.name} onInput=${set('name')} required />
    <${Field} label=${t('redemptions.amount')} name="amount" type="number" min="0" step="any" value=${f.amount} onInput=${set('amount')} required />
    <${Field} label=${t('redemptions.count')} name="count" type="number" min="1" max="100" step="1" value=${f.count} onInput=${set('count')} required />
    <button class="primary" type="submit" disabled=${busy}>${t('redemptions.submit')}</button>
  </form>`;
}
