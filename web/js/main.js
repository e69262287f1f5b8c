// The console's entry: loads the public status and the session user, then
// renders the page for the current path inside the layout.
import { Fragment, render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { html } from './html.js';
import { get, post } from './api.js';
import { lang, onLangChange, t } from './i18n.js';
import { applyTheme, currentTheme, nextTheme, setTheme } from './theme.js';
import { navigate, usePath } from './router.js';
import { guestRoutes, routes } from './routes.js';
import { Layout } from './layout.js';
import { Alert } from './ui.js';

// loadUser is the session's user, or null when not logged in (401).
async function loadUser() {
  try {
    return (await get('/api/user/self')).data;
  } catch (err) {
    if (err.status === 401) return null;
    throw err;
  }
}

function App() {
  const path = usePath();
  const [, setTick] = useState(0);
  const [status, setStatus] = useState(null);
  const [user, setUser] = useState(undefined); // undefined: not known yet
  const [error, setError] = useState('');
  const [theme, setThemeState] = useState(currentTheme);

  useEffect(() => onLangChange(() => setTick((n) => n + 1)), []);
  useEffect(() => {
    Promise.all([get('/api/status'), loadUser()]).then(([s, u]) => {
      setStatus(s.data);
      setUser(u);
    }, (err) => setError(err.message));
  }, []);

  const session = {
    user, status, setUser,
    refresh: () => loadUser().then(setUser, (err) => setError(err.message)),
  };
  const guest = guestRoutes.find((r) => r.path === path);
  const route = routes.find((r) => r.path === path);
  const target = user === null && !guest ? '/login' : user && ((guest && !guest.any) || path === '/') ? '/dashboard' : null;
  useEffect(() => { if (status && target) navigate(target, { replace: true }); }, [status, target]);
  useEffect(() => {
    const r = guest || route;
    document.title = (r ? t(r.label) + ' · ' : '') + (status?.system_name || 'modelgate');
    // Move focus to the new page so keyboard and screen reader users
    // start there, not on the link they pressed.
    document.getElementById('main')?.focus();
  }, [path, status, user === null]);

  if (error) return html`<main id="main"><${Alert} error=${error} /></main>`;
  if (!status || user === undefined || target) return html`<main id="main" aria-busy="true">${t('ui.loading')}</main>`;

  const toggleTheme = () => {
    const n = nextTheme(theme);
    setTheme(n);
    setThemeState(n);
  };
  const logout = async () => {
    await post('/api/user/logout').catch(() => {});
    setUser(null);
  };
  let page;
  if (guest) page = html`<${guest.page} session=${session} />`;
  else if (!route) page = html`<h1>${t('ui.notFound')}</h1>`;
  else if (user.role < route.role) page = html`<${Alert} error=${t('ui.forbidden')} />`;
  else page = html`<${route.page} session=${session} />`;
  // A change of language mounts the page afresh: it fetches again, so the
  // server's texts (log details, bank instructions) come in the new one.
  return html`<${Layout} session=${session} path=${path} theme=${theme} onTheme=${toggleTheme} onLogout=${logout}><${Fragment} key=${lang()}>${page}<//><//>`;
}

applyTheme(currentTheme());
render(html`<${App} />`, document.getElementById('app'));
