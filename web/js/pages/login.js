// Login and registration. The password lives only in this form's state
// until the request is sent; the session is the cookie the server sets.
import { useState } from 'preact/hooks';
import { html } from '../html.js';
import { get, post } from '../api.js';
import { t } from '../i18n.js';
import { Link, navigate, queryParam } from '../router.js';
import { Alert, Field, notify } from '../ui.js';
import { Providers, Turnstile } from './accounts.js';

export function Login({ session }) {
  // After a registration the login could not finish (a second factor, a
  // captcha), the name comes filled in (?username=).
  const [username, setUsername] = useState(() => queryParam('username'));
  const [password, setPassword] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      const env = await post('/api/user/login', { username, password });
      setPassword('');
      session.setUser(env.data);
      navigate('/dashboard', { replace: true });
    } catch (err) {
      setError(err.message);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="card narrow" onSubmit=${submit}>
    <h1>${t('login.title')}</h1>
    <${Alert} error=${error} />
    <${Field} label=${t('field.username')} value=${username} onInput=${setUsername} name="username" autocomplete="username" required />
    <${Field} label=${t('field.password')} type="password" value=${password} onInput=${setPassword} name="password" autocomplete="current-password" required />
    <button class="primary" type="submit" disabled=${busy}>${t('login.submit')}</button>
    <${Providers} status=${session.status} />
    ${session.status.register_enabled && html`<p>${t('login.noAccount')} <${Link} href="/register">${t('register.title')}<//></p>`}
  </form>`;
}

export function Register({ session }) {
  const st = session.status;
  const [form, setForm] = useState({ username: '', password: '', confirm: '', email: '', code: '' });
  const [error, setError] = useState('');
  const [info, setInfo] = useState('');
  const [done, setDone] = useState(false);
  const [turnstile, setTurnstile] = useState('');
  const set = (k) => (v) => setForm({ ...form, [k]: v });
  // The inviter's code of a /register?aff=… link.
  const aff = new URLSearchParams(location.search).get('aff') || '';
  if (!st.register_enabled) {
    return html`<div class="card narrow"><h1>${t('register.title')}</h1><${Alert} error=${t('register.closed')} /></div>`;
  }
  const captcha = turnstile ? `&turnstile=${encodeURIComponent(turnstile)}` : '';
  const sendCode = async () => {
    setError('');
    setInfo('');
    try {
      await get(`/api/verification?email=${encodeURIComponent(form.email)}${captcha}`);
      setInfo(t('register.codeSent'));
    } catch (err) {
      setError(err.message);
    }
  };
  const submit = async (e) => {
    e.preventDefault();
    setError('');
    if (form.password !== form.confirm) {
      setError(t('field.passwordMismatch'));
      return;
    }
    try {
      await post('/api/user/register', { username: form.username, password: form.password, email: form.email,
        verification_code: form.code, aff_code: aff, turnstile });
    } catch (err) {
      setError(err.message);
      return;
    }
    // Registered: log in with the same name and password and land on the
    // dashboard (issue 30 §1). When the login needs more (a captcha token
    // already spent, a second factor), the login page opens with the name filled.
    const { username, password } = form;
    setForm({ ...form, password: '', confirm: '' });
    try {
      const env = await post('/api/user/login', { username, password });
      if (!env.data) throw new Error('no user in the login answer');
      notify(t('register.welcome', { user: username }));
      session.setUser(env.data);
      navigate('/dashboard', { replace: true });
    } catch {
      setDone(true);
      navigate('/login?username=' + encodeURIComponent(username), { replace: true });
    }
  };
  if (done) {
    return html`<div class="card narrow"><h1>${t('register.title')}</h1>
      <${Alert} kind="ok" error=${t('register.done')} />
      <${Link} href="/login">${t('login.title')}<//></div>`;
  }
  if (st.password_register === false) {
    return html`<div class="card narrow"><h1>${t('register.title')}</h1>
      <p>${t('register.providersOnly')}</p><${Providers} status=${st} /></div>`;
  }
  const verify = st.email_verification;
  return html`<form class="card narrow" onSubmit=${submit}>
    <h1>${t('register.title')}</h1>
    <${Alert} error=${error} />
    ${info && html`<${Alert} kind="ok" error=${info} />`}
    <${Field} label=${t('field.username')} value=${form.username} onInput=${set('username')} autocomplete="username" required />
    <${Field} label=${t('field.password')} type="password" value=${form.password} onInput=${set('password')} autocomplete="new-password" required />
    <${Field} label=${t('field.passwordConfirm')} type="password" value=${form.confirm} onInput=${set('confirm')} autocomplete="new-password" required />
    <${Field} label=${verify ? t('field.email') : t('field.emailOptional')} type="email" value=${form.email} onInput=${set('email')} autocomplete="email" required=${verify} />
    ${verify && html`<button type="button" id="send-code" onClick=${sendCode}>${t('register.sendCode')}</button>
      <${Field} label=${t('register.code')} value=${form.code} onInput=${set('code')} name="verification_code" autocomplete="one-time-code" required />`}
    <${Turnstile} status=${st} onToken=${setTurnstile} />
    <button class="primary" type="submit">${t('register.submit')}</button>
    <${Providers} status=${st} />
    <p><${Link} href="/login">${t('register.haveAccount')}<//></p>
  </form>`;
}
