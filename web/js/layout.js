// The frame around every page: a skip link, the header with the
// navigation the user's role allows (the administration pages in
// collapsible sections; on a phone the whole navigation behind a menu
// button), the language and theme switches and logout, then the page in
// <main>, and the save confirmations (toasts).
import { useState } from 'preact/hooks';
import { html } from './html.js';
import { lang, languages, setLang, t } from './i18n.js';
import { adminSections, navGroups, routes } from './routes.js';
import { Link } from './router.js';
import { nextTheme } from './theme.js';
import { Toasts } from './ui.js';

const CLOSED_KEY = 'modelgate.nav.closed';

// closedSections are the administration sections the user folded, kept
// across reloads; every section starts open.
function loadClosed() {
  try {
    const v = JSON.parse(localStorage.getItem(CLOSED_KEY) || '[]');
    return Array.isArray(v) ? v : [];
  } catch {
    return [];
  }
}

export function Layout({ session, path, theme, onTheme, onLogout, children }) {
  const { user, status } = session;
  // The phone's menu is open for the page it was opened on: choosing a
  // page closes it in the same render that draws the page (an effect ran
  // a frame later, after the new page was already on screen).
  const [menuPath, setMenuPath] = useState(null);
  const menuOpen = menuPath === path;
  const [closed, setClosed] = useState(loadClosed);
  const toggleSection = (id, open) => {
    if (open === !closed.includes(id)) return;
    const next = open ? closed.filter((c) => c !== id) : [...closed, id];
    localStorage.setItem(CLOSED_KEY, JSON.stringify(next));
    setClosed(next);
  };
  const visible = user ? routes.filter((r) => user.role >= r.role) : [];
  const link = (r) => html`<${Link} href=${r.path} aria-current=${path === r.path ? 'page' : undefined}>${t(r.label)}<//>`;
  const group = (g) => {
    const items = visible.filter((r) => r.group === g.id);
    if (items.length === 0) return null;
    if (g.id !== 'admin') {
      return html`<nav id=${'nav-' + g.id} aria-label=${t(g.label)}>
        <span class="nav-title">${t(g.label)}</span><div class="nav-links">${items.map(link)}</div>
      </nav>`;
    }
    return html`<nav id="nav-admin" aria-label=${t(g.label)}>
      <span class="nav-title">${t(g.label)}</span>
      <div class="nav-admin">
        ${adminSections.map((s) => {
          const own = items.filter((r) => (r.section || 'system') === s.id);
          return own.length > 0 && html`<details id=${'nav-section-' + s.id} open=${!closed.includes(s.id)}
            onToggle=${(e) => toggleSection(s.id, e.currentTarget.open)}>
            <summary>${t(s.label)}</summary>
            <div class="nav-links">${own.map(link)}</div>
          </details>`;
        })}
      </div>
    </nav>`;
  };
  // The theme button names what a press does, not the theme in use
  // (issue 30 §3); the theme in use is in its title.
  const action = t('theme.use.' + nextTheme(theme));
  return html`
    <a class="skip" href="#main">${t('nav.skip')}</a>
    <header class=${'top' + (menuOpen ? ' open' : '')}>
      <span class="brand">${status.system_name || 'modelgate'}</span>
      ${user && html`<button type="button" id="menu" aria-expanded=${menuOpen ? 'true' : 'false'} aria-controls="nav-groups"
        onClick=${() => setMenuPath(menuOpen ? null : path)}>${menuOpen ? t('nav.menuClose') : t('nav.menu')}</button>`}
      ${user && html`<div class="nav-groups" id="nav-groups">${navGroups.map(group)}</div>`}
      <div class="controls">
        <label for="lang" class="sr-only">${t('ui.language')}</label>
        <select id="lang" value=${lang()} onChange=${(e) => setLang(e.currentTarget.value)}>
          ${languages.map((l) => html`<option value=${l.id}>${l.name}</option>`)}
        </select>
        <button type="button" id="theme" onClick=${onTheme} title=${t('theme.current', { theme: t('theme.' + theme) })}>
          ${action}
        </button>
        ${user && html`<span class="who">${user.display_name || user.username}</span>
          <button type="button" id="logout" onClick=${onLogout}>${t('nav.logout')}</button>`}
      </div>
    </header>
    <main id="main" tabindex="-1">${children}</main>
    <${Toasts} />`;
}
