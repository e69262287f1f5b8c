// Redeem a code into the balance (POST /api/user/topup). An
// Idempotency-Key per attempt keeps a double submit from crediting twice.
import { useState } from 'preact/hooks';
import { html } from '../html.js';
import { ApiError } from '../api.js';
import { t } from '../i18n.js';
import { money } from '../format.js';
import { Alert, Field } from '../ui.js';

export function Redeem({ session }) {
  const [code, setCode] = useState('');
  const [error, setError] = useState('');
  const [done, setDone] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    setDone('');
    try {
      const res = await fetch('/api/user/topup', {
        method: 'POST', credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', 'Idempotency-Key': crypto.randomUUID() },
        body: JSON.stringify({ key: code }),
      });
      const env = await res.json().catch(() => null);
      if (!env || !env.success) throw new ApiError(env?.message || `HTTP ${res.status}`, res.status);
      setDone(t('redeem.done', { amount: money(env.data, session.status.quota_per_unit) }));
      setCode('');
      session.refresh();
    } catch (err) {
      setError(err.message);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="card narrow" onSubmit=${submit}>
    <h1>${t('nav.redeem')}</h1>
    <${Alert} error=${error} />
    <${Alert} kind="ok" error=${done} />
    <${Field} label=${t('redeem.code')} value=${code} onInput=${setCode} autocomplete="off" required />
    <button class="primary" type="submit" disabled=${busy}>${t('redeem.submit')}</button>
  </form>`;
}
