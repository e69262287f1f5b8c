// Profile: display name, password (PUT /api/user/self), the access
// token (POST /api/user/token makes a new one, replacing the old), the bound
// sign-in methods and the invitation link (pages/bindings.js).
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { post, put } from '../api.js';
import { t } from '../i18n.js';
import { Alert, CopyButton, Field } from '../ui.js';
import { Invitations, SignInMethods } from './bindings.js';

export function Profile({ session }) {
  const { user } = session;
  const [name, setName] = useState(user.display_name || '');
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [msg, setMsg] = useState({ error: '', ok: '' });
  const [token, setToken] = useState(user.access_token || '');
  // The login answer lacks the bindings and invitation figures: read them.
  useEffect(() => { session.refresh(); }, []);
  const save = async (e) => {
    e.preventDefault();
    if (password !== confirm) {
      setMsg({ error: t('field.passwordMismatch'), ok: '' });
      return;
    }
    try {
      const env = await put('/api/user/self', { display_name: name, password });
      session.setUser(env.data);
      setPassword('');
      setConfirm('');
      setMsg({ error: '', ok: t('profile.saved') });
    } catch (err) {
      setMsg({ error: err.message, ok: '' });
    }
  };
  const newToken = async () => {
    try {
      setToken((await post('/api/user/token')).data);
    } catch (err) {
      setMsg({ error: err.message, ok: '' });
    }
  };
  return html`<section>
    <h1>${t('nav.profile')}</h1>
    <${Alert} error=${msg.error} />
    <${Alert} kind="ok" error=${msg.ok} />
    <form class="card narrow" onSubmit=${save}>
      <p>${t('field.username')}: <strong>${user.username}</strong></p>
      <${Field} label=${t('profile.displayName')} value=${name} onInput=${setName} maxlength="20" />
      <${Field} label=${t('profile.newPassword')} hint=${t('profile.passwordHint')} type="password" value=${password} onInput=${setPassword} autocomplete="new-password" />
      <${Field} label=${t('field.passwordConfirm')} type="password" value=${confirm} onInput=${setConfirm} autocomplete="new-password" />
      <button class="primary" type="submit">${t('action.save')}</button>
    </form>
    <div class="card narrow">
      <h2>${t('profile.accessToken')}</h2>
      <p>${t('profile.accessTokenHint')}</p>
      ${token && html`<p><code>${token}</code> <${CopyButton} text=${token} /></p>`}
      <button type="button" onClick=${newToken}>${t('profile.newToken')}</button>
    </div>
    <${SignInMethods} session=${session} />
    <${Invitations} session=${session} />
  </section>`;
}
