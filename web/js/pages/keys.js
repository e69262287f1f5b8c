// The user's API keys: a server-paged list, create (the full key shown
// once, with a copy button), edit, enable/disable and delete.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { del, get, put, query } from '../api.js';
import { t } from '../i18n.js';
import { dateTime, money } from '../format.js';
import { Alert, CopyButton, Pager, notify, rowClass, useFlash } from '../ui.js';
import { KeyForm } from './keyform.js';

const PAGE_SIZE = 10;

export function Keys({ session }) {
  const perUnit = session.status.quota_per_unit;
  const [page, setPage] = useState(0);
  const [list, setList] = useState({ items: [], total: 0 });
  const [error, setError] = useState('');
  const [editing, setEditing] = useState(null); // null, {} (new) or a key
  const [created, setCreated] = useState(null); // the full key, shown once
  const load = async () => {
    try {
      const env = await get('/api/token/' + query({ p: page, page_size: PAGE_SIZE }));
      setList({ items: env.data || [], total: env.total || 0 });
    } catch (err) {
      setError(err.message);
    }
  };
  useEffect(() => { load(); }, [page]);

  const act = async (f) => {
    setError('');
    try {
      await f();
      await load();
    } catch (err) {
      setError(err.message);
    }
  };
  const toggle = (k) => act(() => put('/api/token/?status_only=1', { id: k.id, status: k.status === 1 ? 2 : 1 }));
  const remove = (k) => confirm(t('keys.confirmDelete', { name: k.name })) && act(() => del(`/api/token/${k.id}`));
  const [flashed, flash] = useFlash();
  const saved = (k) => {
    if (!editing.id) setCreated(k);
    setEditing(null);
    load();
    notify(t('saved.key', { name: k.name }));
    flash(k.id);
  };

  return html`<section>
    <h1>${t('nav.keys')}</h1>
    <${Alert} error=${error} />
    ${created && html`<div class="card created" role="status">
      <p>${t('keys.createdOnce')}</p>
      <code id="new-key">${created.key}</code>
      <div class="actions"><${CopyButton} text=${created.key} />
        <button type="button" onClick=${() => setCreated(null)}>${t('action.close')}</button></div>
    </div>`}
    ${editing
      ? html`<${KeyForm} initial=${editing.id ? editing : null} perUnit=${perUnit} onSaved=${saved} onCancel=${() => setEditing(null)} />`
      : html`<button class="primary" type="button" onClick=${() => setEditing({})}>${t('keys.create')}</button>`}
    <div class="table-scroll"><table>
      <caption class="sr-only">${t('nav.keys')}</caption>
      <thead><tr>
        <th>${t('keys.name')}</th><th>${t('keys.key')}</th><th>${t('keys.status')}</th>
        <th>${t('keys.quota')}</th><th>${t('keys.used')}</th><th>${t('keys.expires')}</th><th>${t('keys.actions')}</th>
      </tr></thead>
      <tbody>
        ${list.items.length === 0 && html`<tr><td colspan="7">${t('list.empty')}</td></tr>`}
        ${list.items.map((k) => html`<tr key=${k.id} class=${rowClass(flashed, k.id)}>
          <td>${k.name}</td><td><code>${k.key}</code></td>
          <td><span class=${'badge s' + k.status}>${t('keys.status' + k.status)}</span></td>
          <td>${k.unlimited_quota ? t('keys.unlimitedShort') : money(k.remain_quota, perUnit)}</td>
          <td>${money(k.used_quota, perUnit)}</td>
          <td>${k.expired_time < 0 ? t('keys.never') : dateTime(k.expired_time)}</td>
          <td class="actions">
            <button type="button" onClick=${() => toggle(k)}>${k.status === 1 ? t('action.disable') : t('action.enable')}</button>
            <button type="button" onClick=${() => setEditing(k)}>${t('action.edit')}</button>
            <button type="button" class="danger" onClick=${() => remove(k)}>${t('action.delete')}</button>
          </td>
        </tr>`)}
      </tbody>
    </table></div>
    <${Pager} page=${page} pageSize=${PAGE_SIZE} total=${list.total} onPage=${setPage} />
  </section>`;
}
