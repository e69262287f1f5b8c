// A history-API router: the server answers index.html for every path
// without a file extension, so /keys or /admin reload into the right page.
import { useEffect, useState } from 'preact/hooks';
import { html } from './html.js';

const listeners = new Set();

// navigate goes to path, which may carry a query (/profile?bound=oidc):
// pages are chosen by the path alone, the query stays in location.search.
export function navigate(path, { replace = false } = {}) {
  if (path === location.pathname + location.search) return;
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  listeners.forEach((f) => f(location.pathname));
}

// usePath is the current path; the component re-renders when it changes.
export function usePath() {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const onPop = () => setPath(location.pathname);
    listeners.add(setPath);
    addEventListener('popstate', onPop);
    return () => {
      listeners.delete(setPath);
      removeEventListener('popstate', onPop);
    };
  }, []);
  return path;
}

// queryParam is a parameter of the address's query ("" when absent): the
// users page links to other pages filtered by one user this way.
export const queryParam = (k) => new URLSearchParams(location.search).get(k) || '';

// Link is an <a> that navigates in place; modified clicks (new tab) and
// other buttons keep the browser's behaviour.
export function Link({ href, children, ...rest }) {
  const onClick = (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };
  return html`<a href=${href} onClick=${onClick} ...${rest}>${children}</a>`;
}
