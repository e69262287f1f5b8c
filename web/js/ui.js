// Small components every page uses: a labelled field, an error line, a
// pager, a copy button. Each input gets a <label>, so screen readers and
// the browser tests find it by its text.
import { useState } from 'preact/hooks';
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
