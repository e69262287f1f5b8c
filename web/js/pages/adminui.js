// Helpers the administration pages share: a labelled <select> and
// <textarea> (ui.js has the single-line Field), a search box, a
// list loader for server-paged lists, and an Idempotency-Key write.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { ApiError, get, query } from '../api.js';
import { t } from '../i18n.js';

let nextID = 0;
const newID = () => `a${++nextID}`;

// Select is a label with a <select>; options are [value, label] pairs.
export function Select({ label, value, onInput, options, ...rest }) {
  const [id] = useState(newID);
  return html`<div class="field">
    <label for=${id}>${label}</label>
    <select id=${id} value=${value} onChange=${(e) => onInput(e.currentTarget.value)} ...${rest}>
      ${options.map(([v, l]) => html`<option value=${v} selected=${String(v) === String(value)}>${l}</option>`)}
    </select>
  </div>`;
}

// TextArea is a label with a multi-line input.
export function TextArea({ label, hint, value, onInput, ...rest }) {
  const [id] = useState(newID);
  return html`<div class="field">
    <label for=${id}>${label}</label>
    <textarea id=${id} value=${value} onInput=${(e) => onInput(e.currentTarget.value)} ...${rest}></textarea>
    ${hint && html`<small>${hint}</small>`}
  </div>`;
}

// SearchBox submits a keyword; an empty one lists everything.
export function SearchBox({ onSearch, initial = '' }) {
  const [id] = useState(newID);
  const [kw, setKw] = useState(initial);
  const submit = (e) => { e.preventDefault(); onSearch(kw.trim()); };
  return html`<form class="search" role="search" onSubmit=${submit}>
    <label for=${id}>${t('admin.search')}</label>
    <input id=${id} type="search" value=${kw} onInput=${(e) => setKw(e.currentTarget.value)} />
    <button type="submit">${t('admin.searchButton')}</button>
  </form>`;
}

// usePaged loads a server-paged list (base is the list route; a keyword
// switches to base + "search"; initial is the first keyword). It returns
// the page state and reload.
export function usePaged(base, pageSize, setError, initial = '') {
  const [page, setPage] = useState(0);
  const [keyword, setKeyword] = useState(initial);
  const [list, setList] = useState({ items: [], total: 0 });
  const load = async () => {
    try {
      const path = keyword ? base + 'search' : base;
      const env = await get(path + query({ p: page, page_size: pageSize, keyword }));
      setList({ items: env.data || [], total: env.total || 0 });
    } catch (err) {
      setError(err.message);
    }
  };
  useEffect(() => { load(); }, [page, keyword]);
  const search = (kw) => { setPage(0); setKeyword(kw); };
  return { page, setPage, list, load, search, keyword };
}

// postOnce POSTs with a fresh Idempotency-Key, so a double submit of a
// credit cannot apply twice (docs/api.md, Idempotent credits).
export async function postOnce(path, body) {
  const res = await fetch(path, {
    method: 'POST', credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': crypto.randomUUID() },
    body: JSON.stringify(body),
  });
  const env = await res.json().catch(() => null);
  if (!env || !env.success) throw new ApiError(env?.message || `HTTP ${res.status}`, res.status);
  return env;
}

// run wraps an action: clears the error, runs f, reports its failure.
export const runner = (setError) => async (f) => {
  setError('');
  try {
    await f();
    return true;
  } catch (err) {
    setError(err.message);
    return false;
  }
};
