// Users (admin): search and paging on the server; create (POST /api/user/),
// edit the display name, email, group, role and status and reset the
// password (PUT /api/user/), enable/disable and promote/demote
// (POST /api/user/manage), top-up or deduction with a remark (POST
// /api/topup with an Idempotency-Key); each row links to the user's logs,
// orders and subscriptions on their pages, filtered by the user.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get, post, put } from '../api.js';
import { t } from '../i18n.js';
import { count, dateTime, money } from '../format.js';
import { Link } from '../router.js';
import { Alert, Field, Pager, notify, rowClass, useFlash } from '../ui.js';
import { SearchBox, Select, TextArea, postOnce, runner, usePaged } from './adminui.js';

const PAGE_SIZE = 20;
const ROOT = 100;

// grantable are the roles the caller may give: those below its own
// (docs/api.md, Who manages whom).
const grantable = (me) => [1, 10].filter((r) => r < me.role).map((r) => [String(r), t('users.role' + r)]);

export function Users({ session }) {
  const perUnit = session.status.quota_per_unit;
  const [error, setError] = useState('');
  // form: null, or {kind: 'create' | 'edit' | 'password' | 'topup', user}.
  const [form, setForm] = useState(null);
  const [flashed, flash] = useFlash();
  const { page, setPage, list, load, search } = usePaged('/api/user/', PAGE_SIZE, setError);
  const run = runner(setError);
  const me = session.user;
  const manage = (u, action) => run(async () => {
    await post('/api/user/manage', { username: u.username, action });
    await load();
    notify(t('users.saved', { user: u.username }));
    flash(u.id);
  });
  const open = (kind, user) => { setError(''); setForm({ kind, user }); };
  // saved closes the form, reloads the list and confirms on the row.
  const saved = (msg, id) => { setForm(null); load(); notify(msg); flash(id); };
  const close = () => setForm(null);
  const u0 = form?.user;

  return html`<section>
    <h1>${t('nav.users')}</h1>
    <${Alert} error=${error} />
    <${SearchBox} onSearch=${search} />
    ${form?.kind === 'create' || form?.kind === 'edit'
      ? html`<${UserForm} key=${u0 ? u0.id : 'new'} user=${u0} me=${me} onCancel=${close} onSaved=${saved} />`
      : !form && html`<p><button class="primary" type="button" id="user-new" onClick=${() => open('create', null)}>${t('users.create')}</button></p>`}
    ${form?.kind === 'password' && html`<${PasswordForm} key=${u0.id} user=${u0} onCancel=${close} onSaved=${saved} />`}
    ${form?.kind === 'topup' && html`<${TopupForm} key=${u0.id} user=${u0} perUnit=${perUnit} onCancel=${close} onDone=${saved} />`}
    ${form?.kind === 'keys' && html`<${UserKeys} key=${u0.id} user=${u0} perUnit=${perUnit} onClose=${close} />`}
    <div class="table-scroll"><table id="users">
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
          return html`<tr key=${u.id} data-user=${u.username} class=${rowClass(flashed, u.id)}>
            <td>${u.id}</td><td>${u.username}${u.display_name && u.display_name !== u.username ? html` <span class="muted">(${u.display_name})</span>` : ''}
              ${u.email && html`<br /><small class="muted email">${u.email}</small>`}
              <div class="user-links">
                <${Link} class="user-logs" href=${'/admin/logs?username=' + encodeURIComponent(u.username)}>${t('users.logs')}<//>
                <${Link} class="user-orders" href=${'/admin/orders?user_id=' + u.id}>${t('users.orders')}<//>
                <${Link} class="user-subs" href=${'/admin/subscriptions?keyword=' + encodeURIComponent(u.username)}>${t('users.subs')}<//>
                <a href="#user-keys" class="user-keys" onClick=${(e) => { e.preventDefault(); open('keys', u); }}>${t('users.keys')}</a>
              </div></td>
            <td>${t('users.role' + u.role)}</td>
            <td><span class=${'badge s' + u.status}>${t('users.status' + u.status)}</span></td>
            <td>${u.group}</td><td class="balance">${money(u.quota, perUnit)}</td><td>${money(u.used_quota, perUnit)}</td>
            <td>${count(u.request_count)}</td>
            <td class="actions">${manageable && html`
              <button type="button" class="toggle" onClick=${() => manage(u, u.status === 1 ? 'disable' : 'enable')}>
                ${u.status === 1 ? t('action.disable') : t('action.enable')}</button>
              ${me.role >= ROOT && (u.role === 1
                ? html`<button type="button" onClick=${() => manage(u, 'promote')}>${t('users.promote')}</button>`
                : html`<button type="button" onClick=${() => manage(u, 'demote')}>${t('users.demote')}</button>`)}
              <button type="button" class="edit" onClick=${() => open('edit', u)}>${t('action.edit')}</button>
              <button type="button" class="reset-password" onClick=${() => open('password', u)}>${t('users.resetPassword')}</button>
              <button type="button" class="topup" onClick=${() => open('topup', u)}>${t('users.topup')}</button>`}
            </td>
          </tr>`;
        })}
      </tbody>
    </table></div>
    <${Pager} page=${page} pageSize=${PAGE_SIZE} total=${list.total} onPage=${setPage} />
  </section>`;
}

// UserKeys lists a user's API keys, masked (GET /api/user/{id}/tokens):
// read-only, the owner manages them on their own keys page.
function UserKeys({ user, perUnit, onClose }) {
  const [keys, setKeys] = useState(null);
  const [error, setError] = useState('');
  useEffect(() => {
    get(`/api/user/${user.id}/tokens?page_size=100`).then((env) => setKeys(env.data || []), (err) => setError(err.message));
  }, [user.id]);
  return html`<div class="card" id="user-keys" aria-labelledby="user-keys-title">
    <h2 id="user-keys-title">${t('users.keysOf', { user: user.username })}</h2>
    <${Alert} error=${error} />
    ${keys && html`<div class="table-scroll"><table>
      <thead><tr>
        <th>${t('keys.name')}</th><th>${t('keys.key')}</th><th>${t('keys.status')}</th>
        <th>${t('keys.quota')}</th><th>${t('keys.used')}</th><th>${t('keys.expires')}</th>
      </tr></thead>
      <tbody>
        ${keys.length === 0 && html`<tr><td colspan="6">${t('list.empty')}</td></tr>`}
        ${keys.map((k) => html`<tr key=${k.id} data-key=${k.name}>
          <td>${k.name}</td><td><code>${k.key}</code></td>
          <td><span class=${'badge s' + k.status}>${t('keys.status' + k.status)}</span></td>
          <td>${k.unlimited_quota ? t('keys.unlimitedShort') : money(k.remain_quota, perUnit)}</td>
          <td>${money(k.used_quota, perUnit)}</td>
          <td>${k.expired_time < 0 ? t('keys.never') : dateTime(k.expired_time)}</td>
        </tr>`)}
      </tbody>
    </table></div>`}
    <div class="actions"><button type="button" onClick=${onClose}>${t('action.close')}</button></div>
  </div>`;
}

// UserForm creates a user (user null) or edits one: display name, email,
// group, role (only those below the caller's) and status; a new user also
// gets a username and a password. Only the fields changed are sent.
function UserForm({ user, me, onSaved, onCancel }) {
  const [f, setF] = useState(() => ({
    username: '', password: '', display_name: user?.display_name || '', email: user?.email || '',
    group: user?.group || 'default', role: String(user?.role || 1), status: String(user?.status || 1),
  }));
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const set = (k) => (v) => setF({ ...f, [k]: v });
  const submit = async (e) => {
    e.preventDefault();
    setError('');
    setBusy(true);
    try {
      const body = { display_name: f.display_name, email: f.email.trim(), group: f.group.trim(), role: Number(f.role) };
      if (user) {
        const env = await put('/api/user/', { id: user.id, ...body, status: Number(f.status) });
        onSaved(t('users.saved', { user: user.username }), env.data?.id ?? user.id);
      } else {
        const env = await post('/api/user/', { ...body, username: f.username.trim(), password: f.password });
        setF({ ...f, password: '' });
        onSaved(t('users.created', { user: env.data?.username || f.username.trim() }), env.data?.id);
      }
    } catch (err) {
      setError(err.message);
    } finally {
      setBusy(false);
    }
  };
  const roles = grantable(me);
  return html`<form class="card narrow" id="user-form" onSubmit=${submit} aria-labelledby="user-form-title">
    <h2 id="user-form-title">${user ? t('users.editTitle', { user: user.username }) : t('users.create')}</h2>
    <${Alert} error=${error} />
    ${!user && html`
      <${Field} label=${t('field.username')} name="username" value=${f.username} onInput=${set('username')} maxlength="20" autocomplete="off" required />
      <${Field} label=${t('field.password')} hint=${t('users.passwordHint')} type="password" name="password" value=${f.password}
        onInput=${set('password')} minlength="8" maxlength="64" autocomplete="new-password" required />`}
    <${Field} label=${t('users.displayName')} name="display_name" value=${f.display_name} onInput=${set('display_name')} maxlength="20" />
    <${Field} label=${t('field.email')} type="email" name="email" value=${f.email} onInput=${set('email')} maxlength="128" />
    <${Field} label=${t('users.group')} name="group" value=${f.group} onInput=${set('group')} maxlength="32" required />
    <${Select} label=${t('users.role')} name="role" value=${f.role} onInput=${set('role')} options=${roles} />
    ${user && html`<${Select} label=${t('keys.status')} name="status" value=${f.status} onInput=${set('status')}
      options=${[['1', t('users.status1')], ['2', t('users.status2')]]} />`}
    <div class="actions">
      <button class="primary" type="submit" disabled=${busy}>${t('action.save')}</button>
      <button type="button" onClick=${onCancel}>${t('action.cancel')}</button>
    </div>
  </form>`;
}

// randomPassword is 16 characters from the browser's CSPRNG, for an
// admin who resets a password and passes it on.
function randomPassword() {
  const abc = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';
  return Array.from(crypto.getRandomValues(new Uint32Array(16)), (n) => abc[n % abc.length]).join('');
}

// PasswordForm sets a user's password (PUT /api/user/ with password),
// which ends the user's sessions (docs/api.md). The field is plain text:
// the admin passes the new password on.
function PasswordForm({ user, onSaved, onCancel }) {
  const [password, setPassword] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setError('');
    setBusy(true);
    try {
      await put('/api/user/', { id: user.id, password });
      setPassword('');
      onSaved(t('users.passwordDone', { user: user.username }), user.id);
    } catch (err) {
      setError(err.message);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="card narrow" id="password-form" onSubmit=${submit} aria-labelledby="password-title">
    <h2 id="password-title">${t('users.passwordFor', { user: user.username })}</h2>
    <${Alert} error=${error} />
    <${Field} label=${t('users.newPassword')} hint=${t('users.newPasswordHint')} name="new_password" value=${password}
      onInput=${setPassword} minlength="8" maxlength="64" autocomplete="new-password" spellcheck="false" required />
    <div class="actions">
      <button type="button" id="generate-password" onClick=${() => setPassword(randomPassword())}>${t('users.generate')}</button>
      <button class="primary" type="submit" disabled=${busy}>${t('users.setPassword')}</button>
      <button type="button" onClick=${onCancel}>${t('action.cancel')}</button>
    </div>
  </form>`;
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
      onDone(t('users.topupDone', { amount: money(quota, perUnit), user: user.username }), user.id);
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
