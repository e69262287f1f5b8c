// The profile's account cards (issue 31): the sign-in methods bound to the
// user, with a button to bind each enabled provider and a form to bind an
// email address with a mailed code; and the invitation link with its
// figures (aff_count, aff_history_quota of GET /api/user/self).
import { useState } from 'preact/hooks';
import { html } from '../html.js';
import { get, query } from '../api.js';
import { t } from '../i18n.js';
import { money } from '../format.js';
import { Alert, CopyButton, Field } from '../ui.js';
import { Turnstile, startGitHub, startOIDC } from './accounts.js';

// SignInMethods lists email, OpenID Connect and GitHub with what is bound.
// A provider's button sends the browser to the provider; its callback page
// binds it (the session is logged in) and comes back here.
export function SignInMethods({ session }) {
  const { user, status } = session;
  const [error, setError] = useState('');
  const bound = new URLSearchParams(location.search).get('bound');
  const start = (f) => () => {
    setError('');
    f(status).catch((err) => setError(err.message));
  };
  const row = (id, name, value, button) => html`<tr id=${'method-' + id}>
    <th scope="row">${name}</th>
    <td>${value ? html`<span class="badge s1">${t('bind.bound')}</span> <code>${value}</code>` : html`<span class="muted">${t('bind.none')}</span>`}</td>
    <td>${button}</td>
  </tr>`;
  return html`<div class="card narrow" id="sign-in-methods">
    <h2>${t('bind.title')}</h2>
    <${Alert} error=${error} />
    ${(bound === 'oidc' || bound === 'github') && html`<${Alert} kind="ok" error=${t('bind.done')} />`}
    <table>
      <tbody>
        ${row('email', t('field.email'), user.email, null)}
        ${status.oidc && row('oidc', 'OpenID Connect', user.oidc_id,
          !user.oidc_id && html`<button type="button" id="bind-oidc" onClick=${start(startOIDC)}>${t('bind.button')}</button>`)}
        ${status.github_oauth && row('github', 'GitHub', user.github_id,
          !user.github_id && html`<button type="button" id="bind-github" onClick=${start(startGitHub)}>${t('bind.button')}</button>`)}
      </tbody>
    </table>
    ${status.email_bind && html`<${EmailBinding} session=${session} />`}
  </div>`;
}

// EmailBinding mails a code to the address (GET /api/verification) and
// binds the address with it (GET /api/oauth/email/bind).
function EmailBinding({ session }) {
  const { status } = session;
  const [email, setEmail] = useState('');
  const [code, setCode] = useState('');
  const [turnstile, setTurnstile] = useState('');
  const [msg, setMsg] = useState({ error: '', ok: '' });
  const sendCode = async () => {
    setMsg({ error: '', ok: '' });
    try {
      await get('/api/verification' + query({ email, turnstile }));
      setMsg({ error: '', ok: t('register.codeSent') });
    } catch (err) {
      setMsg({ error: err.message, ok: '' });
    }
  };
  const bind = async (e) => {
    e.preventDefault();
    setMsg({ error: '', ok: '' });
    try {
      await get('/api/oauth/email/bind' + query({ email, code }));
      await session.refresh();
      setEmail('');
      setCode('');
      setMsg({ error: '', ok: t('bind.emailDone') });
    } catch (err) {
      setMsg({ error: err.message, ok: '' });
    }
  };
  return html`<form id="bind-email" onSubmit=${bind}>
    <h3>${t(session.user.email ? 'bind.emailChange' : 'bind.emailTitle')}</h3>
    <${Alert} error=${msg.error} />
    <${Alert} kind="ok" error=${msg.ok} />
    <${Field} label=${t('field.email')} type="email" value=${email} onInput=${setEmail} name="email" autocomplete="email" required />
    <${Turnstile} status=${status} onToken=${setTurnstile} />
    <p><button type="button" id="bind-send-code" onClick=${sendCode}>${t('register.sendCode')}</button></p>
    <${Field} label=${t('register.code')} value=${code} onInput=${setCode} name="code" autocomplete="one-time-code" required />
    <button class="primary" type="submit">${t('bind.emailSubmit')}</button>
  </form>`;
}

// Invitations shows the user's invitation link (the registration page with
// ?aff=), how many registered with it and what their first paid orders
// earned.
export function Invitations({ session }) {
  const { user, status } = session;
  if (!user.aff_code) return null;
  const link = `${location.origin}/register?aff=${encodeURIComponent(user.aff_code)}`;
  return html`<div class="card narrow" id="invitations">
    <h2>${t('invite.title')}</h2>
    <p>${t('invite.hint')}</p>
    <p><code id="invite-link">${link}</code> <${CopyButton} text=${link} /></p>
    <div class="stats">
      <div class="stat"><span>${t('invite.count')}</span><strong id="aff-count">${user.aff_count ?? 0}</strong></div>
      <div class="stat"><span>${t('invite.rewards')}</span><strong id="aff-rewards">${money(user.aff_history_quota, status.quota_per_unit)}</strong></div>
    </div>
  </div>`;
}
