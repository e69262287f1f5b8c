// The API key form, for create and edit: name, model allow list, subnet,
// expiry, quota limit and rate limits (docs/api.md, API keys;
// docs/decisions/rate-limits.md).
import { useState } from 'preact/hooks';
import { html } from '../html.js';
import { post, put } from '../api.js';
import { t } from '../i18n.js';
import { fromLocalInput, toLocalInput } from '../format.js';
import { Alert, Field } from '../ui.js';

export function KeyForm({ initial, perUnit, onSaved, onCancel }) {
  const editing = Boolean(initial && initial.id);
  const [f, setF] = useState({
    name: initial?.name ?? '',
    models: initial?.models ?? '',
    subnet: initial?.subnet ?? '',
    expires: toLocalInput(initial?.expired_time),
    unlimited: initial ? initial.unlimited_quota : true,
    // The limit is edited in CNY; the API takes quota.
    limit: initial ? String((initial.remain_quota || 0) / perUnit) : '0',
    // Rate limits: whole numbers, 0 = none (the group's limits still apply).
    rpm: String(initial?.rpm_limit ?? 0),
    tpm: String(initial?.tpm_limit ?? 0),
    concurrency: String(initial?.concurrency_limit ?? 0),
  });
  const [error, setError] = useState('');
  const set = (k) => (v) => setF({ ...f, [k]: v });
  const submit = async (e) => {
    e.preventDefault();
    setError('');
    const body = {
      name: f.name, models: f.models, subnet: f.subnet,
      expired_time: fromLocalInput(f.expires),
      unlimited_quota: f.unlimited,
      remain_quota: Math.round(Number(f.limit || 0) * perUnit),
      rpm_limit: Number(f.rpm || 0), tpm_limit: Number(f.tpm || 0), concurrency_limit: Number(f.concurrency || 0),
    };
    try {
      const env = editing ? await put('/api/token/', { id: initial.id, ...body }) : await post('/api/token/', body);
      onSaved(env.data);
    } catch (err) {
      setError(err.message);
    }
  };
  return html`<form class="card" onSubmit=${submit} aria-labelledby="keyform-title">
    <h2 id="keyform-title">${editing ? t('keys.edit') : t('keys.create')}</h2>
    <${Alert} error=${error} />
    <${Field} label=${t('keys.name')} value=${f.name} onInput=${set('name')} maxlength="50" required />
    <${Field} label=${t('keys.models')} hint=${t('keys.modelsHint')} value=${f.models} onInput=${set('models')} />
    <${Field} label=${t('keys.subnet')} hint=${t('keys.subnetHint')} value=${f.subnet} onInput=${set('subnet')} />
    <${Field} label=${t('keys.expires')} hint=${t('keys.expiresHint')} type="datetime-local" value=${f.expires} onInput=${set('expires')} />
    <${Field} label=${t('keys.unlimited')} type="checkbox" value=${f.unlimited} onInput=${set('unlimited')} />
    ${!f.unlimited && html`<${Field} label=${t('keys.limit')} type="number" min="0" step="any" value=${f.limit} onInput=${set('limit')} />`}
    <${Field} label=${t('keys.rpmLimit')} hint=${t('keys.rateLimitHint')} type="number" min="0" step="1" value=${f.rpm} onInput=${set('rpm')} />
    <${Field} label=${t('keys.tpmLimit')} type="number" min="0" step="1" value=${f.tpm} onInput=${set('tpm')} />
    <${Field} label=${t('keys.concurrencyLimit')} type="number" min="0" step="1" value=${f.concurrency} onInput=${set('concurrency')} />
    <div class="actions">
      <button class="primary" type="submit">${t('action.save')}</button>
      <button type="button" onClick=${onCancel}>${t('action.cancel')}</button>
    </div>
  </form>`;
}
