// The frame around every page: a skip link, the header with the
// navigation the user's role allows, the language and theme switches and
// logout, then the page in <main>.
import { html } from './html.js';
import { lang, languages, setLang, t } from './i18n.js';
import { navGroups, routes } from './routes.js';
import { Link } from './router.js';

export function Layout({ session, path, theme, onTheme, onLogout, children }) {
  const { user, status } = session;
  const visible = user ? routes.filter((r) => user.role >= r.role) : [];
  return html`
    <a class="skip" href="#main">${t('nav.skip')}</a>
    <header class="top">
      <span class="brand">${status.system_name || 'modelgate'}</span>
      ${navGroups.map((g) => {
        const items = visible.filter((r) => r.group === g.id);
        return items.length > 0 && html`<nav id=${'nav-' + g.id} aria-label=${t(g.label)}>
          <span class="nav-title">${t(g.label)}</span>
          ${items.map((r) => html`<${Link} href=${r.path} aria-current=${path === r.path ? 'page' : undefined}>${t(r.label)}<//>`)}
        </nav>`;
      })}
      <div class="controls">
        <label for="lang" class="sr-only">${t('ui.language')}</label>
        <select id="lang" value=${lang()} onChange=${(e) => setLang(e.currentTarget.value)}>
          ${languages.map((l) => html`<option value=${l.id}>${l.name}</option>`)}
        </select>
        <button type="button" id="theme" onClick=${onTheme} aria-label=${t('ui.theme') + ': ' + t('theme.' + theme)}>
          ${t('theme.' + theme)}
        </button>
        ${user && html`<span class="who">${user.display_name || user.username}</span>
          <button type="button" id="logout" onClick=${onLogout}>${t('nav.logout')}</button>`}
      </div>
    </header>
    <main id="main" tabindex="-1">${children}</main>`;
}
