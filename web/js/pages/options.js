// Runtime options (root): GET /api/option/ lists every known option with
// its value as text; PUT /api/option/ sets one. The server validates each
// value, and its message is shown beside the option as sent.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get, put } from '../api.js';
import { t } from '../i18n.js';
import { Alert, notify } from '../ui.js';
import { runner } from './adminui.js';

export function Options() {
  const [error, setError] = useState('');
  const [items, setItems] = useState([]);
  const [editing, setEditing] = useState(''); // the key being edited
  const [saved, setSaved] = useState('');
  const run = runner(setError);
  const load = () => run(async () => setItems((await get('/api/option/')).data || []));
  useEffect(() => { load(); }, []);
  const open = (key) => { setEditing(key); setSaved(''); setError(''); };
  return html`<section>
    <h1>${t('nav.options')}</h1>
    <${Alert} error=${saved && t('options.saved', { key: saved })} kind="ok" />
    <div class="table-scroll"><table id="options">
      <caption class="sr-only">${t('nav.options')}</caption>
      <thead><tr><th>${t('options.key')}</th><th>${t('options.value')}</th><th>${t('keys.actions')}</th></tr></thead>
      <tbody>
        ${items.length === 0 && html`<tr><td colspan="3">${t('list.empty')}</td></tr>`}
        ${items.map((o) => (editing === o.key
          ? html`<${OptionEdit} key=${o.key} option=${o} error=${error} onCancel=${() => open('')}
              onSave=${(value) => run(async () => {
                await put('/api/option/', { key: o.key, value });
                setEditing('');
                setSaved(o.key);
                await load();
                notify(t('options.saved', { key: o.key }));
              })} />`
          : html`<tr key=${o.key} data-option=${o.key} class=${saved === o.key ? 'saved' : undefined}>
              <td><code>${o.key}</code></td><td class="value"><code>${o.value}</code></td>
              <td class="actions"><button type="button" onClick=${() => open(o.key)}
                aria-label=${t('options.editKey', { key: o.key })}>${t('action.edit')}</button></td>
            </tr>`))}
      </tbody>
    </table></div>
    ${!editing && html`<${Alert} error=${error} />`}
  </section>`;
}

// OptionEdit is one option's row in edit mode: the value and the server's
// message when it refuses it.
function OptionEdit({ option, error, onSave, onCancel }) {
  const [value, setValue] = useState(option.value);
  const id = 'option-' + option.key;
  const submit = (e) => { e.preventDefault(); onSave(value); };
  return html`<tr data-option=${option.key} class="editing">
    <td><label for=${id}><code>${option.key}</code></label></td>
    <td><form id="option-form" onSubmit=${submit}>
      <input id=${id} name="value" value=${value} onInput=${(e) => setValue(e.currentTarget.value)} autocomplete="off" />
      <${Alert} error=${error} />
    </form></td>
    <td class="actions">
      <button class="primary" type="submit" form="option-form">${t('action.save')}</button>
      <button type="button" onClick=${onCancel}>${t('action.cancel')}</button>
    </td>
  </tr>`;
}
