// Top-up (POST /api/topup/order): a preset or, when allowed, a custom
// amount, an enabled channel, then the channel's answer: a QR code for the
// wallets, the instructions for a bank transfer. The presets and channels
// come from GET /api/payment/status.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { get, post } from '../api.js';
import { t } from '../i18n.js';
import { money } from '../format.js';
import { Alert, Field } from '../ui.js';
import { Link } from '../router.js';
import { MethodSelect, PayResult, chosenMethod, yuan } from './pay.js';

export function Topup({ session }) {
  const perUnit = session.status.quota_per_unit;
  const [st, setSt] = useState(null);
  const [choice, setChoice] = useState(''); // a preset's amount, or 'custom'
  const [custom, setCustom] = useState('');
  const [method, setMethod] = useState('');
  const [result, setResult] = useState(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    get('/api/payment/status').then((env) => {
      setSt(env.data);
      const first = (env.data.presets || [])[0];
      setChoice(first ? String(first.amount) : env.data.allow_custom ? 'custom' : '');
    }, (err) => setError(err.message));
  }, []);
  if (!st) return html`<section><h1>${t('nav.topup')}</h1><${Alert} error=${error} /></section>`;

  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    setResult(null);
    try {
      const body = { pay_method: chosenMethod(st.channels || [], method) };
      if (choice === 'custom') body.amount = Number(custom);
      else body.preset_amount = Number(choice);
      setResult(await post('/api/topup/order', body));
    } catch (err) {
      setError(err.message);
    } finally {
      setBusy(false);
    }
  };
  // The quota a custom amount credits: amount × exchange_rate.
  const customQuota = Math.round(Number(custom || 0) * (st.exchange_rate || 0));

  return html`<section>
    <h1>${t('nav.topup')}</h1>
    <${Alert} error=${error} />
    ${!st.topup_enabled
      ? html`<p>${t('topup.closed')}</p>`
      : html`<form class="card narrow" id="topup-form" onSubmit=${submit}>
        <fieldset>
          <legend>${t('topup.amount')}</legend>
          ${(st.presets || []).map((p) => html`<div class="field check preset">
            <label for=${'preset-' + p.amount}>${t('topup.preset', { amount: yuan(p.amount), quota: money(p.bonus_quota, perUnit) })}</label>
            <input type="radio" id=${'preset-' + p.amount} name="amount" checked=${choice === String(p.amount)} onChange=${() => setChoice(String(p.amount))} />
          </div>`)}
          ${st.allow_custom && html`<div class="field check">
            <label for="preset-custom">${t('topup.custom')}</label>
            <input type="radio" id="preset-custom" name="amount" checked=${choice === 'custom'} onChange=${() => setChoice('custom')} />
          </div>`}
          ${st.allow_custom && choice === 'custom' && html`<${Field} label=${t('topup.customAmount')} type="number" min="0.01" step="0.01"
            value=${custom} onInput=${setCustom} name="custom_amount" required
            hint=${t('topup.credits', { quota: money(customQuota, perUnit) })} />`}
        </fieldset>
        <${MethodSelect} id="topup-method" channels=${st.channels || []} value=${method} onChange=${setMethod} />
        <button class="primary" type="submit" disabled=${busy || !chosenMethod(st.channels || [], method) || !choice}>${t('topup.submit')}</button>
      </form>`}
    ${result && html`<div class="card" id="topup-order">
      <p>${t('topup.ordered', { amount: yuan(result.amount), quota: money(result.bonus_quota, perUnit) })}</p>
      <p class="muted">${t('plans.orderNo')} <code>${result.order.order_no}</code> · <${Link} href="/orders">${t('plans.seeOrders')}<//></p>
    </div>`}
    ${result && html`<${PayResult} pay=${result.pay} />`}
  </section>`;
}
