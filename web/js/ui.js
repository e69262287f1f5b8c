// Small components every page uses: a labelled field, an error line, a
// pager, a copy button. Each input gets a <label>, so screen readers and
// the browser tests find it by its text.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from './html.js';
import { t } from './i18n.js';

let nextID = 0;
const fieldID = () => `f${++nextID}`;

// Field is a label with one input; extra props go to the <input>.
export function Field({ label, hint, value, onInput, type = 'text', ...rest }) {
  const [id] = useState(fieldID);
  const set = (e) => onInput(type === 'checkbox' ? e.currentTarget.checked : e.currentTarget.value);
  const input = type === 'checkbox'
    ? html`<input id=${id} type="checkbox" checked=${value} onChange=${set} ...${rest} />`
    : html`<input id=${id} type=${type} value=${value} onInput=${set} ...${rest} />`;
  return html`<div class=${'field' + (type === 'checkbox' ? ' check' : '')}>
    <label for=${id}>${label}</label>${input}
    ${hint && html`<small>${hint}</small>`}
  </div>`;
}

// Alert shows an API message as the server sent it.
export function Alert({ error, kind = 'error' }) {
  if (!error) return null;
  return html`<p class=${'alert ' + kind} role=${kind === 'error' ? 'alert' : 'status'}>${error}</p>`;
}

// Pager moves through a server-paged list: page is 0-based.
export function Pager({ page, pageSize, total, onPage }) {
  const pages = Math.max(1, Math.ceil(total / pageSize));
  return html`<nav class="pager" aria-label=${t('pager.label')}>
    <button type="button" disabled=${page <= 0} onClick=${() => onPage(page - 1)}>${t('pager.prev')}</button>
    <span>${t('pager.status', { page: page + 1, pages, total })}</span>
    <button type="button" disabled=${page + 1 >= pages} onClick=${() => onPage(page + 1)}>${t('pager.next')}</button>
  </nav>`;
}

// CopyButton copies text; it says so for a moment, or says it failed
// (the clipboard needs a secure context: https or localhost).
export function CopyButton({ text }) {
  const [state, setState] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setState('copied');
    } catch {
      setState('failed');
    }
    setTimeout(() => setState(''), 2000);
  };
  return html`<button type="button" onClick=${copy}>
    ${state === 'copied' ? t('copy.done') : state === 'failed' ? t('copy.failed') : t('copy.button')}
  </button>`;
}

// Save confirmations: notify(text) shows a toast at the foot of the page
// for TOAST_MS (the layout renders <Toasts>); useFlash marks the saved
// row for as long. Both outlive a reload of the list, so the reader sees
// them after the form closed (issue 30 §1: at least 2 s).
export const TOAST_MS = 4000;
const toastListeners = new Set();
let toastSeq = 0;

export function notify(text, kind = 'ok') {
  const m = { id: ++toastSeq, text, kind };
  toastListeners.forEach((f) => f(m));
}

export function Toasts() {
  const [items, setItems] = useState([]);
  useEffect(() => {
    const add = (m) => {
      setItems((l) => [...l, m]);
      setTimeout(() => setItems((l) => l.filter((x) => x.id !== m.id)), TOAST_MS);
    };
    toastListeners.add(add);
    return () => toastListeners.delete(add);
  }, []);
  // aria-live on the container (present before any toast) so screen
  // readers announce each one; no role=status, which pages use for their own lines.
  return html`<div id="toasts" class="toasts" aria-live="polite">
    ${items.map((m) => html`<p key=${m.id} class=${'toast ' + m.kind}>${m.text}</p>`)}
  </div>`;
}

// useFlash is [the saved row's key, flash(key)]; the mark clears after TOAST_MS.
export function useFlash() {
  const [key, setKey] = useState(null);
  const timer = useRef(0);
  useEffect(() => () => clearTimeout(timer.current), []);
  const flash = (k) => {
    clearTimeout(timer.current);
    setKey(k);
    timer.current = setTimeout(() => setKey(null), TOAST_MS);
  };
  return [key, flash];
}

// rowClass is the class of a table row: "saved" while flashed.
export const rowClass = (flashed, k) => (flashed !== null && flashed === k ? 'saved' : undefined);
