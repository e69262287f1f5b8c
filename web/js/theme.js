// Themes: "system" follows prefers-color-scheme (the CSS does it); "light"
// and "dark" override it through <html data-theme>. The choice is kept in
// localStorage.
const KEY = 'modelgate.theme';
export const themes = ['system', 'light', 'dark'];

export function currentTheme() {
  const t = localStorage.getItem(KEY);
  return themes.includes(t) ? t : 'system';
}

export function applyTheme(t) {
  if (t === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = t;
}

export function setTheme(t) {
  localStorage.setItem(KEY, t);
  applyTheme(t);
}

// nextTheme is the toggle's order: system → light → dark → system.
export const nextTheme = (t) => themes[(themes.indexOf(t) + 1) % themes.length];
