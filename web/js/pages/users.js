// Users (admin): search and paging on the server, enable/disable and
// promote/demote (POST /api/user/manage), top-up or deduction with a
// remark (POST /api/topup with an Idempotency-Key).
import { useState } from 'preact/hooks';
import { html } from '../html.js';
import { post } from '../api.js';
import { t } from '../i18n.js';
import { count, money } from '../format.js';
import { Alert, Field, Pager } from '../ui.js';
import { SearchBox, TextArea, postOnce, runner, usePaged } from './adminui.js';

const PAGE_SIZE = 20;

export function Users({ session }) {
  const perUnit = session.status.quota_per_unit;
  const [error, setError] = useState('');
  const [done, setDone] = useState('');
  const [topup, setTopup] = useState(null); // the user being topped up
  const { page, setPage, list, load, search } = usePaged('/api/user/', PAGE_SIZE, setError);
  const run = runner(setError);
  const manage = (u, action) => run(async () => {
    setDone('');
    await post('/api/user/manage', { username: u.username, action });
    await load();
  });
  const me = session.user;

  return html`<section>
    <h1>${t('nav.users')}</h1>
    <${Alert} error=${error} />
    <${Alert} kind="ok" error=${done} />
    <${SearchBox} onSearch=${search} />
    ${topup && html`<${TopupForm} user=${topup} perUnit=${perUnit} onCancel=${() => setTopup(null)}
      onDone=${(msg) => { setTopup(null); setDone(msg); load(); }} />`}
    <table id="users">
      <caption class="sr-only">${t('nav.users')}</caption>
      <thead><tr>
        <th>ID</th><th>${t('field.username')}</th><th>${t('users.role')}</th><th>${t('keys.status')}</th>
        <th>${t('users.group')}</th><th>${t('dash.balance')}</th><th>${t('keys.used')}</th>
        <th>${t('dash.requests')}</th><th>${t('keys.actions')}</th>
      </tr></thead>
      <tbody>
        ${list.items.length === 0 && html`<tr><td colspan="9">${t('list.empty')}</td></tr>`}
        ${list.items.map((u) => {
          // Only users of a lower role can be managed; only root grants admin.
          const manageable = u.role < me.role && u.status !== 3;
          return html`<tr key=${u.id} data-user=${u.username}>
            <td>${u.id}</td><td>${u.username}${u.display_name && u.display_name !== u.username ? html` <span class="muted">(${u.display_name})</span>` : ''}</td>
            <td>${t('users.role' + u.role)}</td>
            <td><span class=${'badge s' + u.status}>${t('users.status' + u.status)}</span></td>
            <td>${u.group}</td><td class="balance">${money(u.quota, perUnit)}</td><td>${money(u.used_quota, perUnit)}</td>
            <td>${count(u.request_count)}</td>
            <td class="actions">${manageable && html`
              <button type="button" onClick=${() => manage(u, u.status === 1 ? 'disable' : 'enable')}>
                ${u.status === 1 ? t('action.disable') : t('action.enable')}</button>
              ${me.role >= 100 && (u.role === 1
                ? html`<button type="button" onClick=${() => manage(u, 'promote')}>${t('users.promote')}</button>`
                : html`<button type="button" onClick=${() => manage(u, 'demote')}>${t('users.demote')}</button>`)}
              <button type="button" class="topup" onClick=${() => { setDone(''); setTopup(u); }}>${t('users.topup')}</button>`}
            </td>
          </tr>`;
        })}
      </tbody>
    </table>
    <${Pager} page=${page} pageSize=${PAGE_SIZE} total=${list.total} onPage=${setPage} />
  </section>`;
}

// TopupForm credits (or, with a negative amount, deducts) a balance in CNY.
function TopupForm({ user, perUnit, onDone, onCancel }) {
  const [amount, setAmount] = useState('');
  const [remark, setRemark] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setError('');
    const quota = Math.round(Number(amount) * perUnit);
    if (!Number.isFinite(quota) || quota === 0) {
      setError(t('users.amountInvalid'));
      return;
    }
    setBusy(true);
    try {
      await postOnce('/api/topup', { user_id: user.id, quota, remark });
      onDone(t('users.topupDone', { amount: money(quota, perUnit), user: user.username }));
    } catch (err) {
      setError(err.message);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="card narrow" id="topup-form" onSubmit=${submit} aria-labelledby="topup-title">
    <h2 id="topup-title">${t('users.topupFor', { user: user.username })}</h2>
    <${Alert} error=${error} />
    <${Field} label=${t('users.amount')} hint=${t('users.amountHint')} type="number" step="any" name="amount"
      value=${amount} onInput=${setAmount} required />
    <${TextArea} label=${t('users.remark')} name="remark" maxlength="500" rows="2" value=${remark} onInput=${setRemark} />
    <div class="actions">
      <button class="primary" type="submit" disabled=${busy}>${t('users.topup')}</button>
      <button type="button" onClick=${onCancel}>${t('action.cancel')}</button>
    </div>
  </form>`;
}
