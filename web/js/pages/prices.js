// Model prices and group prices (root). Neither list is paged on the
// server (docs/api.md Prices): both are short, one row per model or group.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { del, get, post, put } from '../api.js';
import { t } from '../i18n.js';
import { Alert, Field } from '../ui.js';
import { Select, runner } from './adminui.js';

export function Prices() {
  const [error, setError] = useState('');
  const [models, setModels] = useState([]);
  const [groups, setGroups] = useState([]);
  const [editModel, setEditModel] = useState(null); // null, {} or a price
  const [editGroup, setEditGroup] = useState(null);
  const run = runner(setError);
  const load = () => run(async () => {
    const [m, g] = await Promise.all([get('/api/model_price/'), get('/api/group_price/')]);
    setModels(m.data || []);
    setGroups(g.data || []);
  });
  useEffect(() => { load(); }, []);
  const removeModel = (p) => confirm(t('prices.confirmDelete', { name: p.model_name })) &&
    run(async () => { await del(`/api/model_price/${p.id}`); await load(); });
  const removeGroup = (p) => confirm(t('prices.confirmDelete', { name: `${p.group_name} ${p.model_name}` })) &&
    run(async () => { await del(`/api/group_price/${p.id}`); await load(); });
  const toggle = (p) => run(async () => { await put('/api/model_price/', { id: p.id, enabled: !p.enabled }); await load(); });

  return html`<section>
    <h1>${t('nav.prices')}</h1>
    <${Alert} error=${error} />
    <h2>${t('prices.models')}</h2>
    ${editModel
      ? html`<${ModelPriceForm} initial=${editModel.id ? editModel : null} onCancel=${() => setEditModel(null)} onSaved=${() => { setEditModel(null); load(); }} />`
      : html`<button class="primary" type="button" id="model-price-new" onClick=${() => setEditModel({})}>${t('prices.createModel')}</button>`}
    <table id="model-prices">
      <caption class="sr-only">${t('prices.models')}</caption>
      <thead><tr><th>${t('prices.model')}</th><th>${t('prices.billing')}</th><th>${t('prices.input')}</th>
        <th>${t('prices.output')}</th><th>${t('prices.cached')}</th><th>${t('prices.perRequest')}</th>
        <th>${t('keys.status')}</th><th>${t('keys.actions')}</th></tr></thead>
      <tbody>
        ${models.length === 0 && html`<tr><td colspan="8">${t('list.empty')}</td></tr>`}
        ${models.map((p) => html`<tr key=${p.id} data-model=${p.model_name}>
          <td><code>${p.model_name}</code></td><td>${t('prices.billing_' + p.billing_type)}</td>
          <td>${p.input_price}</td><td>${p.output_price}</td><td>${p.cached_price}</td><td>${p.per_request_price}</td>
          <td><span class=${'badge s' + (p.enabled ? 1 : 2)}>${p.enabled ? t('keys.status1') : t('keys.status2')}</span></td>
          <td class="actions">
            <button type="button" onClick=${() => toggle(p)}>${p.enabled ? t('action.disable') : t('action.enable')}</button>
            <button type="button" onClick=${() => setEditModel(p)}>${t('action.edit')}</button>
            <button type="button" class="danger" onClick=${() => removeModel(p)}>${t('action.delete')}</button>
          </td></tr>`)}
      </tbody>
    </table>
    <p class="muted">${t('prices.unitHint')}</p>

    <h2>${t('prices.groups')}</h2>
    ${editGroup
      ? html`<${GroupPriceForm} initial=${editGroup.id ? editGroup : null} onCancel=${() => setEditGroup(null)} onSaved=${() => { setEditGroup(null); load(); }} />`
      : html`<button class="primary" type="button" id="group-price-new" onClick=${() => setEditGroup({})}>${t('prices.createGroup')}</button>`}
    <table id="group-prices">
      <caption class="sr-only">${t('prices.groups')}</caption>
      <thead><tr><th>${t('channels.group')}</th><th>${t('prices.model')}</th><th>${t('prices.discount')}</th><th>${t('keys.actions')}</th></tr></thead>
      <tbody>
        ${groups.length === 0 && html`<tr><td colspan="4">${t('list.empty')}</td></tr>`}
        ${groups.map((p) => html`<tr key=${p.id}>
          <td>${p.group_name}</td><td>${p.model_name || html`<span class="muted">${t('prices.allModels')}</span>`}</td><td>${p.discount}</td>
          <td class="actions">
            <button type="button" onClick=${() => setEditGroup(p)}>${t('action.edit')}</button>
            <button type="button" class="danger" onClick=${() => removeGroup(p)}>${t('action.delete')}</button>
          </td></tr>`)}
      </tbody>
    </table>
  </section>`;
}

function ModelPriceForm({ initial, onSaved, onCancel }) {
  const [f, setF] = useState({
    model_name: initial?.model_name ?? '', billing_type: initial?.billing_type ?? 'token',
    input_price: String(initial?.input_price ?? 0), output_price: String(initial?.output_price ?? 0),
    cached_price: String(initial?.cached_price ?? 0), per_request_price: String(initial?.per_request_price ?? 0),
  });
  const [error, setError] = useState('');
  const set = (k) => (v) => setF({ ...f, [k]: v });
  const submit = async (e) => {
    e.preventDefault();
    setError('');
    const body = { ...f };
    for (const k of ['input_price', 'output_price', 'cached_price', 'per_request_price']) body[k] = Number(f[k] || 0);
    try {
      if (initial) await put('/api/model_price/', { id: initial.id, ...body });
      else await post('/api/model_price/', body);
      onSaved();
    } catch (err) {
      setError(err.message);
    }
  };
  return html`<form class="card" id="model-price-form" onSubmit=${submit} aria-labelledby="mpform-title">
    <h2 id="mpform-title">${initial ? t('prices.editModel') : t('prices.createModel')}</h2>
    <${Alert} error=${error} />
    <${Field} label=${t('prices.model')} name="model_name" value=${f.model_name} onInput=${set('model_name')}
      maxlength="191" required disabled=${Boolean(initial)} />
    <${Select} label=${t('prices.billing')} name="billing_type" value=${f.billing_type} onInput=${set('billing_type')}
      options=${[['token', t('prices.billing_token')], ['per_request', t('prices.billing_per_request')]]} />
    ${f.billing_type === 'token' ? html`
      <${Field} label=${t('prices.input')} type="number" min="0" step="any" name="input_price" value=${f.input_price} onInput=${set('input_price')} />
      <${Field} label=${t('prices.output')} type="number" min="0" step="any" name="output_price" value=${f.output_price} onInput=${set('output_price')} />
      <${Field} label=${t('prices.cached')} hint=${t('prices.cachedHint')} type="number" min="0" step="any" name="cached_price" value=${f.cached_price} onInput=${set('cached_price')} />`
    : html`<${Field} label=${t('prices.perRequest')} type="number" min="0" step="any" name="per_request_price" value=${f.per_request_price} onInput=${set('per_request_price')} />`}
    <div class="actions">
      <button class="primary" type="submit">${t('action.save')}</button>
      <button type="button" onClick=${onCancel}>${t('action.cancel')}</button>
    </div>
  </form>`;
}

function GroupPriceForm({ initial, onSaved, onCancel }) {
  const [f, setF] = useState({ group_name: initial?.group_name ?? '', model_name: initial?.model_name ?? '', discount: String(initial?.discount ?? 1) });
  const [error, setError] = useState('');
  const set = (k) => (v) => setF({ ...f, [k]: v });
  const submit = async (e) => {
    e.preventDefault();
    setError('');
    const body = { ...f, discount: Number(f.discount) };
    try {
      if (initial) await put('/api/group_price/', { id: initial.id, ...body });
      else await post('/api/group_price/', body);
      onSaved();
    } catch (err) {
      setError(err.message);
    }
  };
  return html`<form class="card" id="group-price-form" onSubmit=${submit} aria-labelledby="gpform-title">
    <h2 id="gpform-title">${initial ? t('prices.editGroup') : t('prices.createGroup')}</h2>
    <${Alert} error=${error} />
    <${Field} label=${t('channels.group')} name="group_name" value=${f.group_name} onInput=${set('group_name')} maxlength="32" required />
    <${Field} label=${t('prices.model')} hint=${t('prices.groupModelHint')} name="model_name" value=${f.model_name} onInput=${set('model_name')} maxlength="191" />
    <${Field} label=${t('prices.discount')} hint=${t('prices.discountHint')} type="number" min="0" max="10" step="any" name="discount" value=${f.discount} onInput=${set('discount')} />
    <div class="actions">
      <button class="primary" type="submit">${t('action.save')}</button>
      <button type="button" onClick=${onCancel}>${t('action.cancel')}</button>
    </div>
  </form>`;
}
