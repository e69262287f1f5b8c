// Model prices and group prices (root). Neither list is paged on the
// server (docs/api.md Prices): both are short, one row per model or group.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { del, get, post, put } from '../api.js';
import { t } from '../i18n.js';
import { Alert, Field, notify, rowClass, useFlash } from '../ui.js';
import { count } from '../format.js';
import { Select, runner } from './adminui.js';

export function Prices() {
  const [error, setError] = useState('');
  const [models, setModels] = useState([]);
  const [groups, setGroups] = useState([]);
  const [editModel, setEditModel] = useState(null); // null, {} or a price
  const [editGroup, setEditGroup] = useState(null);
  const run = runner(setError);
  const [flashed, flash] = useFlash();
  // saved confirms a save: the toast, and the row marked (m… model, g… group price).
  const saved = (key, name) => { load(); notify(t('saved.price', { name })); flash(key); };
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
  const toggle = (p) => run(async () => { await put('/api/model_price/', { id: p.id, enabled: !p.enabled }); saved('m' + p.id, p.model_name); });

  return html`<section>
    <h1>${t('nav.prices')}</h1>
    <${Alert} error=${error} />
    <h2>${t('prices.models')}</h2>
    ${editModel
      ? html`<${ModelPriceForm} initial=${editModel.id ? editModel : null} onCancel=${() => setEditModel(null)} onSaved=${(p) => { setEditModel(null); saved('m' + p.id, p.name); }} />`
      : html`<button class="primary" type="button" id="model-price-new" onClick=${() => setEditModel({})}>${t('prices.createModel')}</button>`}
    <div class="table-scroll"><table id="model-prices">
      <caption class="sr-only">${t('prices.models')}</caption>
      <thead><tr><th>${t('prices.model')}</th><th>${t('prices.billing')}</th><th>${t('prices.input')}</th>
        <th>${t('prices.output')}</th><th>${t('prices.cached')}</th><th>${t('prices.cacheWrite')}</th>
        <th>${t('prices.cacheWrite1h')}</th><th>${t('prices.tiers')}</th><th>${t('prices.perRequest')}</th>
        <th>${t('keys.status')}</th><th>${t('keys.actions')}</th></tr></thead>
      <tbody>
        ${models.length === 0 && html`<tr><td colspan="11">${t('list.empty')}</td></tr>`}
        ${models.map((p) => html`<tr key=${p.id} data-model=${p.model_name} class=${rowClass(flashed, 'm' + p.id)}>
          <td><code>${p.model_name}</code></td><td>${t('prices.billing_' + p.billing_type)}</td>
          <td>${p.input_price}</td><td>${p.output_price}</td><td>${p.cached_price}</td>
          <td class="cache-write">${p.cache_write_price}</td><td class="cache-write-1h">${p.cache_write_1h_price}</td>
          <td class="tiers">${(p.tiers || []).map((tr) => '>' + count(tr.above_prompt_tokens)).join(', ')}</td><td>${p.per_request_price}</td>
          <td><span class=${'badge s' + (p.enabled ? 1 : 2)}>${p.enabled ? t('keys.status1') : t('keys.status2')}</span></td>
          <td class="actions">
            <button type="button" onClick=${() => toggle(p)}>${p.enabled ? t('action.disable') : t('action.enable')}</button>
            <button type="button" onClick=${() => setEditModel(p)}>${t('action.edit')}</button>
            <button type="button" class="danger" onClick=${() => removeModel(p)}>${t('action.delete')}</button>
          </td></tr>`)}
      </tbody>
    </table></div>
    <p class="muted">${t('prices.unitHint')}</p>

    <h2>${t('prices.groups')}</h2>
    ${editGroup
      ? html`<${GroupPriceForm} initial=${editGroup.id ? editGroup : null} onCancel=${() => setEditGroup(null)} onSaved=${(p) => { setEditGroup(null); saved('g' + p.id, p.name); }} />`
      : html`<button class="primary" type="button" id="group-price-new" onClick=${() => setEditGroup({})}>${t('prices.createGroup')}</button>`}
    <div class="table-scroll"><table id="group-prices">
      <caption class="sr-only">${t('prices.groups')}</caption>
      <thead><tr><th>${t('channels.group')}</th><th>${t('prices.model')}</th><th>${t('prices.discount')}</th><th>${t('keys.actions')}</th></tr></thead>
      <tbody>
        ${groups.length === 0 && html`<tr><td colspan="4">${t('list.empty')}</td></tr>`}
        ${groups.map((p) => html`<tr key=${p.id} class=${rowClass(flashed, 'g' + p.id)}>
          <td>${p.group_name}</td><td>${p.model_name || html`<span class="muted">${t('prices.allModels')}</span>`}</td><td>${p.discount}</td>
          <td class="actions">
            <button type="button" onClick=${() => setEditGroup(p)}>${t('action.edit')}</button>
            <button type="button" class="danger" onClick=${() => removeGroup(p)}>${t('action.delete')}</button>
          </td></tr>`)}
      </tbody>
    </table></div>
  </section>`;
}

// The prices of a tier, in table order (docs/api.md Prices: a tier is
// above_prompt_tokens and a complete set of token prices).
const TIER_PRICES = ['input_price', 'output_price', 'cached_price', 'cache_write_price', 'cache_write_1h_price'];
const TIER_LABEL = { input_price: 'prices.input', output_price: 'prices.output', cached_price: 'prices.cached',
  cache_write_price: 'prices.cacheWrite', cache_write_1h_price: 'prices.cacheWrite1h' };
const MAX_TIERS = 8;

// toTierRows turns stored tiers into editable rows (strings, so a field
// can be empty while typed); toTiers sends them back as numbers. The order
// is the root's: the server refuses tiers that do not ascend, with its
// message, rather than the page re-sorting them silently.
const toTierRows = (tiers) => (tiers || []).map((tr) => Object.fromEntries(
  ['above_prompt_tokens', ...TIER_PRICES].map((k) => [k, String(tr[k] ?? 0)])));
const toTiers = (rows) => rows.map((r) => Object.fromEntries(
  ['above_prompt_tokens', ...TIER_PRICES].map((k) => [k, Number(r[k] || 0)])));
const emptyTier = () => Object.fromEntries(['above_prompt_tokens', ...TIER_PRICES].map((k) => [k, k === 'above_prompt_tokens' ? '' : '0']));

const PRICE_FIELDS = ['input_price', 'output_price', 'cached_price', 'per_request_price', 'cache_write_price', 'cache_write_1h_price'];

function ModelPriceForm({ initial, onSaved, onCancel }) {
  const [f, setF] = useState({
    model_name: initial?.model_name ?? '', billing_type: initial?.billing_type ?? 'token',
    ...Object.fromEntries(PRICE_FIELDS.map((k) => [k, String(initial?.[k] ?? 0)])),
  });
  const [tiers, setTiers] = useState(() => toTierRows(initial?.tiers));
  const [error, setError] = useState('');
  const set = (k) => (v) => setF({ ...f, [k]: v });
  const setCell = (i, k, v) => setTiers(tiers.map((r, j) => (j === i ? { ...r, [k]: v } : r)));
  const submit = async (e) => {
    e.preventDefault();
    setError('');
    const body = { ...f, tiers: toTiers(tiers) };
    for (const k of PRICE_FIELDS) body[k] = Number(f[k] || 0);
    try {
      const env = initial ? await put('/api/model_price/', { id: initial.id, ...body }) : await post('/api/model_price/', body);
      onSaved({ id: env.data?.id ?? initial?.id, name: f.model_name });
    } catch (err) {
      setError(err.message);
    }
  };
  const priceField = (k, hint) => html`<${Field} label=${t(TIER_LABEL[k])} hint=${hint} type="number" min="0" step="any"
    name=${k} value=${f[k]} onInput=${set(k)} />`;
  return html`<form class="card" id="model-price-form" onSubmit=${submit} aria-labelledby="mpform-title">
    <h2 id="mpform-title">${initial ? t('prices.editModel') : t('prices.createModel')}</h2>
    <${Alert} error=${error} />
    <${Field} label=${t('prices.model')} name="model_name" value=${f.model_name} onInput=${set('model_name')}
      maxlength="191" required disabled=${Boolean(initial)} />
    <${Select} label=${t('prices.billing')} name="billing_type" value=${f.billing_type} onInput=${set('billing_type')}
      options=${[['token', t('prices.billing_token')], ['per_request', t('prices.billing_per_request')]]} />
    ${f.billing_type === 'token' ? html`
      ${priceField('input_price')}
      ${priceField('output_price')}
      ${priceField('cached_price', t('prices.cachedHint'))}
      ${priceField('cache_write_price', t('prices.cacheWriteHint'))}
      ${priceField('cache_write_1h_price', t('prices.cacheWriteHint'))}
      <fieldset class="limits-editor">
        <legend>${t('prices.tiers')}</legend>
        <p class="muted">${t('prices.tiersHint')}</p>
        <div class="scroll"><table id="price-tiers">
          <thead><tr><th>${t('prices.tierAbove')}</th>${TIER_PRICES.map((k) => html`<th>${t(TIER_LABEL[k])}</th>`)}
            <th><span class="sr-only">${t('keys.actions')}</span></th></tr></thead>
          <tbody>
            ${tiers.length === 0 && html`<tr><td colspan=${TIER_PRICES.length + 2}>${t('prices.noTiers')}</td></tr>`}
            ${tiers.map((r, i) => html`<tr key=${i} data-tier=${i}>
              <td><input name="above_prompt_tokens" type="number" min="1" max="100000000" step="1" required
                aria-label=${t('aplans.rowField', { n: i + 1, field: t('prices.tierAbove') })}
                value=${r.above_prompt_tokens} onInput=${(e) => setCell(i, 'above_prompt_tokens', e.currentTarget.value)} /></td>
              ${TIER_PRICES.map((k) => html`<td><input name=${k} type="number" min="0" step="any"
                aria-label=${t('aplans.rowField', { n: i + 1, field: t(TIER_LABEL[k]) })}
                value=${r[k]} onInput=${(e) => setCell(i, k, e.currentTarget.value)} /></td>`)}
              <td><button type="button" class="danger remove-tier" onClick=${() => setTiers(tiers.filter((_, j) => j !== i))}>
                ${t('aplans.removeRow', { n: i + 1 })}</button></td>
            </tr>`)}
          </tbody>
        </table></div>
        <button type="button" id="tier-add" disabled=${tiers.length >= MAX_TIERS} onClick=${() => setTiers([...tiers, emptyTier()])}>
          ${t('prices.tierAdd')}</button>
      </fieldset>`
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
      const env = initial ? await put('/api/group_price/', { id: initial.id, ...body }) : await post('/api/group_price/', body);
      onSaved({ id: env.data?.id ?? initial?.id, name: [f.group_name, f.model_name].filter(Boolean).join(' ') });
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
