// The account pages of a public site (issue 31): the sign-in provider
// buttons, the Turnstile widget, the provider callbacks and the password
// reset link's page. What is enabled comes from GET /api/status.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get, post } from '../api.js';
import { t } from '../i18n.js';
import { Link, navigate } from '../router.js';
import { Alert } from '../ui.js';

// startOIDC sends the browser to the OpenID Connect provider: the server
// keeps state, nonce and PKCE verifier in a cookie and answers the
// provider's authorization URL. The provider comes back to /oauth/oidc,
// which logs in, or binds the subject when a user is logged in.
export async function startOIDC() {
  location.href = (await get('/api/oauth/oidc/start')).data;
}

// startGitHub sends the browser to GitHub's authorize page with a state the
// server keeps in a cookie; GitHub comes back to /oauth/github.
export async function startGitHub(status) {
  const state = (await get('/api/oauth/state')).data;
  const q = new URLSearchParams({ client_id: status.github_client_id, state, scope: 'read:user' });
  location.href = `${status.github_oauth_url}/login/oauth/authorize?${q}`;
}

// Providers shows a button per enabled sign-in provider.
export function Providers({ status }) {
  const [error, setError] = useState('');
  if (!status.oidc && !status.github_oauth) return null;
  const go = (start) => () => start(status).catch((err) => setError(err.message));
  return html`<div class="providers">
    <${Alert} error=${error} />
    ${status.oidc && html`<button type="button" id="login-oidc" onClick=${go(startOIDC)}>${t('login.oidc')}</button>`}
    ${status.github_oauth && html`<button type="button" id="login-github" onClick=${go(startGitHub)}>${t('login.github')}</button>`}
  </div>`;
}

// Turnstile renders Cloudflare's widget when the check is on; onToken gets
// the token the widget issues.
export function Turnstile({ status, onToken }) {
  const box = useRef(null);
  useEffect(() => {
    if (!status.turnstile_check || !box.current) return;
    const render = () => window.turnstile.render(box.current, { sitekey: status.turnstile_site_key, callback: onToken });
    if (window.turnstile) {
      render();
      return;
    }
    const s = document.createElement('script');
    s.src = 'https://challenges.cloudflare.com/turnstile/v0/api.js?render=explicit';
    s.async = true;
    s.onload = render;
    document.head.appendChild(s);
  }, [status.turnstile_check]);
  if (!status.turnstile_check) return null;
  return html`<div class="turnstile" ref=${box}></div>`;
}

// OAuthCallback is the page the provider redirects to (/oauth/oidc,
// /oauth/github): it hands code and state to the server, which logs the
// visitor in, or binds the provider to the logged-in user (message "bind":
// back to the profile, which shows the binding).
export function OAuthCallback({ session, provider }) {
  const [error, setError] = useState('');
  const binding = !!session.user;
  useEffect(() => {
    (async () => {
      try {
        const env = await get(`/api/oauth/${provider}${location.search}`);
        if (env.message === 'bind') {
          await session.refresh();
          navigate('/profile?bound=' + provider, { replace: true });
          return;
        }
        session.setUser(env.data);
        navigate('/dashboard', { replace: true });
      } catch (err) {
        setError(err.message);
      }
    })();
  }, []);
  const back = binding ? html`<${Link} href="/profile">${t('nav.profile')}<//>` : html`<${Link} href="/login">${t('login.title')}<//>`;
  return html`<div class="card narrow"><h1>${t(binding ? 'bind.title' : 'login.title')}</h1>
    ${error ? html`<${Alert} error=${error} />${back}` : html`<p>${t(binding ? 'bind.binding' : 'login.signingIn')}</p>`}
  </div>`;
}

export const OIDCCallback = (props) => html`<${OAuthCallback} ...${props} provider="oidc" />`;
export const GitHubCallback = (props) => html`<${OAuthCallback} ...${props} provider="github" />`;

// ResetPassword is the page of the mailed link: it uses the link once and
// shows the new password.
export function ResetPassword() {
  const [password, setPassword] = useState('');
  const [error, setError] = useState('');
  const q = new URLSearchParams(location.search);
  const submit = async () => {
    try {
      setPassword((await post('/api/user/reset', { email: q.get('email'), token: q.get('token') })).data);
    } catch (err) {
      setError(err.message);
    }
  };
  return html`<div class="card narrow"><h1>${t('reset.title')}</h1>
    <${Alert} error=${error} />
    ${password
      ? html`<p>${t('reset.done')}</p><p><code id="new-password">${password}</code></p><${Link} href="/login">${t('login.title')}<//>`
      : html`<p>${q.get('email')}</p><button class="primary" type="button" onClick=${submit}>${t('reset.submit')}</button>`}
  </div>`;
}
